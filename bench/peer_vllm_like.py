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

        async def limited():
            async with gate:
                return await call(session, url, body)

        start = time.perf_counter()
        cpu0 = time.process_time()
        results = await asyncio.gather(*[limited() for _ in range(a.requests)])
        end = time.perf_counter()
    cpu = time.process_time() - cpu0
    json.dump({"requests": results, "wall": {"start": start, "end": end}, "cpuS": cpu}, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
