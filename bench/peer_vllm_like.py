#!/usr/bin/python3
"""The peer side of bench/peer.ts: streamed chat requests timed the way vLLM's benchmark request function times
them, rewritten here from its published behaviour (no vLLM code in this repository):

  * the response body is read as it arrives and split into SSE messages on blank lines (a message cut across two
    reads waits for the rest); every complete message is stamped when it is taken out of the buffer, so messages
    that arrived in one read get (nearly) the same stamp;
  * TTFT = stamp of the first message whose JSON has a non-empty `choices`, whatever its delta holds (a role-only
    first delta counts);
  * ITL = gaps between consecutive `choices` messages (the finish chunk with an empty delta counts as one);
  * latency = stamp of the last `choices` message − send time;
  * output tokens = usage.completion_tokens, read only from a message WITHOUT choices (a usage riding on the finish
    chunk is not seen); where none came, vLLM counts the generated text with the model's tokenizer, which this
    script has not: it reports null and the messages it saw;
  * TPOT = (latency − TTFT) / (output tokens − 1).

Run by bench/peer.ts with Debian's /usr/bin/python3 and python3-aiohttp. `--vllm-file PATH` loads vLLM's own
request-function module from a file you have (vllm/benchmarks/lib/endpoint_request_func.py) and uses it instead.
Prints one JSON object: {"requests": [...], "wall": {"start": s, "end": s}} with times in seconds.

With `--metrics` (python3-numpy), the run is `vllm bench serve`'s: requests arrive as its `get_request` draws them
(--request-rate, inf: all at once; --burstiness: gamma-shaped gaps, 1 Poisson; scaled so the last arrives at
n/rate), at most --concurrency in flight (its semaphore; a request's times start when it is sent), and the JSON gains
"result": its `calculate_metrics` figures under its result-JSON names (duration, request_throughput,
output_throughput, mean/median/std/p90/p99 of ttft, tpot, itl, e2el in ms), computed with numpy as it does.
`--input-len N` builds prompts of N tokens as the server counts them (one probe request's usage.prompt_tokens, as
vLLM re-aligns its random prompts with the server's /tokenize), each starting with its own number.
"""

import argparse
import asyncio
import importlib.util
import json
import sys
import time

import aiohttp


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--prompt", default="Write a long story about a lighthouse keeper.")
    p.add_argument("--extra-body", default="{}", help="JSON merged into each request body (e.g. ignore_eos)")
    p.add_argument("--vllm-file", default=None)
    p.add_argument("--metrics", action="store_true", help="vllm bench serve's arrivals and result figures (numpy)")
    p.add_argument("--request-rate", type=float, default=float("inf"))
    p.add_argument("--burstiness", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--input-len", type=int, default=None)
    p.add_argument(
        "--keep-alive",
        action="store_true",
        help="reuse connections (llama-server b4747 drops some reused ones: 'Server disconnected' on 17-21 of 64)",
    )
    return p.parse_args()


class MessageSplitter:
    """Bytes in, complete SSE messages out (text between blank lines)."""

    def __init__(self):
        self.pending = ""

    def feed(self, data: bytes):
        self.pending += data.decode("utf-8", errors="replace")
        out = []
        while True:
            cut = self.pending.find("\n\n")
            if cut < 0:
                break
            msg, self.pending = self.pending[:cut].strip(), self.pending[cut + 2 :]
            if msg:
                out.append(msg)
        # A last message not yet followed by its blank line still counts once its JSON parses.
        tail = self.pending.strip()
        if tail.startswith("data:"):
            body = tail[5:].strip()
            if body == "[DONE]":
                out.append(tail)
                self.pending = ""
            elif body:
                try:
                    json.loads(body)
                    out.append(tail)
                    self.pending = ""
                except ValueError:
                    pass
        return out


async def one_request(session, url, body):
    rec = {"ok": False, "ttft": None, "itl": [], "latency": None, "output_tokens": None, "messages": 0, "error": ""}
    # Not vLLM's: when the first non-empty content came, so the table can tell a role chunk's TTFT from a token's.
    rec["first_content"] = None
    # Not vLLM's either: where the server stamps each message's send time ("id: <monotonic ns>", the reference
    # server's --stamp-send), the truth to judge both clients by. perf_counter is CLOCK_MONOTONIC on Linux too.
    rec["server_content_sends"] = []
    rec["lags"] = []
    sent = time.perf_counter()
    rec["start"] = sent
    last = sent
    first = True
    try:
        async with session.post(url, json=body) as resp:
            if resp.status != 200:
                rec["error"] = f"HTTP {resp.status}"
                return rec
            splitter = MessageSplitter()
            async for data in resp.content.iter_any():
                for msg in splitter.feed(data):
                    if msg.startswith(":"):
                        continue
                    lines = msg.split("\n")
                    ids = [ln[3:].strip() for ln in lines if ln.startswith("id:")]
                    datas = [ln[5:].strip() for ln in lines if ln.startswith("data:")]
                    payload = "\n".join(datas) if datas else msg
                    if payload == "[DONE]":
                        continue
                    stamp = time.perf_counter()
                    send = int(ids[0]) / 1e9 if ids and ids[0].isdigit() else None
                    if send is not None:
                        rec["lags"].append(stamp - send)
                    obj = json.loads(payload)
                    if obj.get("choices"):
                        rec["messages"] += 1
                        delta = obj["choices"][0].get("delta") or {}
                        if delta.get("content"):
                            if rec["first_content"] is None:
                                rec["first_content"] = stamp - sent
                            if send is not None:
                                rec["server_content_sends"].append(send - sent)
                        if first:
                            rec["ttft"] = stamp - sent
                            first = False
                        else:
                            rec["itl"].append(stamp - last)
                        last = stamp
                    elif obj.get("usage"):
                        rec["output_tokens"] = obj["usage"].get("completion_tokens")
                        rec["prompt_tokens"] = obj["usage"].get("prompt_tokens")
        rec["ok"] = not first
        rec["latency"] = last - sent
    except Exception as e:  # a failed request is counted, never raised
        rec["error"] = repr(e)
    rec["end"] = time.perf_counter()
    return rec


def from_vllm_module(path):
    spec = importlib.util.spec_from_file_location("peer_vllm_request_func", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    async def call(session, url, body):
        inp = mod.RequestFuncInput(
            prompt=body["messages"][0]["content"],
            api_url=url,
            prompt_len=0,
            output_len=body["max_tokens"],
            model=body["model"],
            extra_body={k: v for k, v in body.items() if k not in ("model", "messages", "max_tokens", "stream")},
        )
        out = await mod.async_request_openai_chat_completions(inp, session)
        return {
            "ok": out.success,
            "ttft": out.ttft if out.success else None,
            "itl": list(out.itl),
            "latency": out.latency,
            "output_tokens": out.output_tokens or None,
            "messages": len(out.itl) + 1 if out.success else 0,
            "error": out.error[:300],
            "start": out.start_time,
            "end": out.start_time + out.latency,
        }

    return call


FILLER = "the quick brown fox jumps over the lazy dog while seven wise owls watch from the old oak tree".split()


async def prompts_of(session, url, a, n):
    """n prompts of --input-len tokens as the server counts them (one probe's usage), each with its own number."""

    def text(words, i):
        return f"{i}: " + " ".join(FILLER[k % len(FILLER)] for k in range(words))

    words = a.input_len
    for _ in range(3):
        body = {"model": a.model, "messages": [{"role": "user", "content": text(words, 0)}], "max_tokens": 1}
        async with session.post(url, json=body) as resp:
            got = ((await resp.json()).get("usage") or {}).get("prompt_tokens")
        if not got or got == a.input_len:
            break
        words = max(1, round(words * a.input_len / got))
    return [text(words, i + 1) for i in range(n)]


def arrival_delays(n, rate, burstiness, rng):
    """vLLM's get_request: gamma(shape=burstiness, scale=1/(rate*burstiness)) gaps, cumulated, scaled to end at n/rate."""
    if rate == float("inf"):
        return [0.0] * n
    if burstiness == float("inf"):
        gaps = [1.0 / rate] * n
    else:
        gaps = list(rng.gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=n))
    delays, t = [], 0.0
    for g in gaps:
        t += g
        delays.append(t)
    factor = (n / rate) / delays[-1] if delays[-1] else 1.0
    return [d * factor for d in delays]


def vllm_metrics(results, duration):
    """vLLM's calculate_metrics (serve.py) over our records: the same formulas, numpy's mean/median/std/percentile."""
    import numpy as np

    ok = [r for r in results if r["ok"]]
    ttfts, tpots, itls, e2els, outs, ins = [], [], [], [], [], []
    for r in ok:
        out = r["output_tokens"] or r["messages"]  # vLLM counts the text with its tokenizer where no usage came
        outs.append(out)
        ins.append(r.get("prompt_tokens") or 0)
        if out > 1:
            tpots.append((r["latency"] - r["ttft"]) / (out - 1))
        itls += r["itl"]
        ttfts.append(r["ttft"])
        e2els.append(r["latency"])
    res = {
        "duration": duration,
        "completed": len(ok),
        "failed": len(results) - len(ok),
        "total_input_tokens": sum(ins),
        "total_output_tokens": sum(outs),
        "request_throughput": len(ok) / duration,
        "output_throughput": sum(outs) / duration,
        "total_token_throughput": (sum(ins) + sum(outs)) / duration,
    }
    for name, xs in (("ttft", ttfts), ("tpot", tpots), ("itl", itls), ("e2el", e2els)):
        res[f"mean_{name}_ms"] = float(np.mean(xs or 0)) * 1000
        res[f"median_{name}_ms"] = float(np.median(xs or 0)) * 1000
        res[f"std_{name}_ms"] = float(np.std(xs or 0)) * 1000
        for p in (90, 99):
            res[f"p{p}_{name}_ms"] = float(np.percentile(xs or 0, p)) * 1000
        res[f"n_{name}"] = len(xs)
    # Not vLLM's: TTFT to the first non-empty content, on the same stamps (the suite's TTFT definition).
    ttfc = [r["first_content"] for r in ok if r.get("first_content") is not None]
    res["mean_first_content_ms"] = float(np.mean(ttfc or 0)) * 1000
    res["median_first_content_ms"] = float(np.median(ttfc or 0)) * 1000
    res["p99_first_content_ms"] = float(np.percentile(ttfc or 0, 99)) * 1000
    return res


async def main():
    a = parse_args()
    url = a.base_url.rstrip("/") + "/v1/chat/completions"
    body = {
        "model": a.model,
        "messages": [{"role": "user", "content": a.prompt}],
        "max_tokens": a.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
        **json.loads(a.extra_body),
    }
    call = from_vllm_module(a.vllm_file) if a.vllm_file else one_request
    gate = asyncio.Semaphore(a.concurrency)
    timeout = aiohttp.ClientTimeout(total=600)
    # A connection per request by default, as vLLM's earlier request functions had (a session per request).
    connector = aiohttp.TCPConnector(limit=a.concurrency, force_close=not a.keep_alive)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        texts = await prompts_of(session, url, a, a.requests) if a.input_len else None

        async def limited(i):
            b = {**body, "messages": [{"role": "user", "content": texts[i]}]} if texts else body
            async with gate:
                return await call(session, url, b)

        if a.metrics:
            import numpy as np

            delays = arrival_delays(a.requests, a.request_rate, a.burstiness, np.random.default_rng(a.seed))
        start = time.perf_counter()
        cpu0 = time.process_time()
        if a.metrics:
            tasks = []
            for i, d in enumerate(delays):
                wait = start + d - time.perf_counter()
                if wait > 0:
                    await asyncio.sleep(wait)
                tasks.append(asyncio.create_task(limited(i)))
            results = await asyncio.gather(*tasks)
        else:
            results = await asyncio.gather(*[limited(i) for i in range(a.requests)])
        end = time.perf_counter()
    cpu = time.process_time() - cpu0
    out = {"requests": results, "wall": {"start": start, "end": end}, "cpuS": cpu}
    if a.metrics:
        out["result"] = vllm_metrics(results, end - start)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
