import { describe, expect, test } from 'vitest';
import { busyFromSlots, promGauge } from '../lib/exchange/server-load.ts';

describe('busyFromSlots', () => {
  test('llama.cpp / reference shape: is_processing per slot', () => {
    expect(
      busyFromSlots([
        { id: 0, is_processing: true },
        { id: 1, is_processing: false },
        { id: 2, is_processing: true },
      ]),
    ).toBe(2);
  });
  test('older llama.cpp: state 0 idle, 1 processing', () => {
    expect(
      busyFromSlots([
        { id: 0, state: 1 },
        { id: 1, state: 0 },
      ]),
    ).toBe(1);
  });
  test('anything else is no evidence (undefined), never 0', () => {
    expect(busyFromSlots(undefined)).toBeUndefined();
    expect(busyFromSlots([])).toBeUndefined();
    expect(busyFromSlots({ slots: [] })).toBeUndefined();
    expect(busyFromSlots([{ id: 0 }])).toBeUndefined();
    expect(busyFromSlots([{ id: 0, is_processing: true }, null])).toBeUndefined();
  });
});

describe('promGauge', () => {
  const text = [
    '# HELP vllm:num_requests_running Number of requests in model execution batches.',
    '# TYPE vllm:num_requests_running gauge',
    'vllm:num_requests_running{engine="0",model_name="m"} 2.0',
    'vllm:num_requests_running{engine="1",model_name="m"} 1.0',
    'vllm:num_requests_running_total 99',
    'llamacpp:requests_processing 3',
    'reference_requests_processing\t0',
  ].join('\n');
  test('sums a gauge over its label sets, ignores comments and longer names', () => {
    expect(promGauge(text, 'vllm:num_requests_running')).toBe(3);
    expect(promGauge(text, 'llamacpp:requests_processing')).toBe(3);
    expect(promGauge(text, 'reference_requests_processing')).toBe(0);
  });
  test('a missing gauge is undefined, not 0', () => {
    expect(promGauge(text, 'sglang:num_running_reqs')).toBeUndefined();
    expect(promGauge('', 'x')).toBeUndefined();
  });
});
