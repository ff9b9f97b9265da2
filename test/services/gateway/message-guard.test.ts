import { describe, expect, it } from 'vitest';
import { loadAgentProto } from '../../../services/gateway/index.ts';
import { guardedDecoder, refusalOf } from '../../../services/gateway/message-guard.ts';
import type { AgentMessage } from '../../../proto/gen/gantry/agent/v1/AgentMessage.ts';

const connect = loadAgentProto().gantry.agent.v1.AgentService.service.Connect;
const encode = (message: AgentMessage) => connect.requestSerialize(message);

describe('Connect messages counted before decoding', () => {
  it('lets a message within the limits through to the decoder', () => {
    const bytes = encode({
      logBatch: { taskId: 't', lines: Array.from({ length: 10_000 }, (_, i) => ({ seq: String(i + 1) })) },
    });
    expect(refusalOf(bytes)).toBeNull();
    expect(guardedDecoder(connect.requestDeserialize)(bytes)).toMatchObject({ payload: 'logBatch' });
  });

  it('refuses more LogLine messages than a batch may hold, across repeated log_batch fields too', () => {
    const half = encode({ logBatch: { taskId: 't', lines: Array.from({ length: 6_000 }, () => ({})) } });
    expect(refusalOf(half)).toBeNull();
    // Two log_batch fields in one message are merged by protobuf: their lines add up.
    expect(refusalOf(Buffer.concat([half, half]))).toMatch(/12000 LogLine messages \(at most 10000/);
    expect(guardedDecoder(connect.requestDeserialize)(Buffer.concat([half, half]))).toEqual({
      refused: expect.stringMatching(/^LogBatch refused/),
    });
  });

  it('refuses a Hello that claims more tasks than an agent runs', () => {
    const ids = Array.from({ length: 1_001 }, (_, i) => `task-${i}`);
    expect(refusalOf(encode({ hello: { runningTaskIds: ids } }))).toMatch(/1001 running task IDs/);
    const results = ids.map((taskId) => ({ taskId }));
    expect(refusalOf(encode({ hello: { unacknowledgedResults: results } }))).toMatch(/1001 unacknowledged results/);
  });

  it('leaves malformed bytes to the decoder, which rejects them', () => {
    const garbage = Buffer.from([0x22, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2]);
    expect(refusalOf(garbage)).toBeNull();
    expect(() => guardedDecoder(connect.requestDeserialize)(garbage)).toThrow();
  });
});
