import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, runTask, waitFor, type Harness } from './task-harness.ts';
import { buildZip } from '../archive/archive-builders.ts';
import { createHash } from 'node:crypto';
import { isAlive } from '../../helpers/processes.ts';

let h: Harness;

beforeEach(() => {
  h = createHarness();
});

afterEach(async () => {
  await h.close();
});

function result(taskId: string) {
  return waitFor(() => h.link.results(taskId)[0]);
}

const DAY_MS = 24 * 60 * 60 * 1000;

describe('TaskManager running scripts', () => {
  it('runs a bash script with the step variables and reports stdout, stderr and the exit code', async () => {
    const task = runTask({
      script: 'echo "greeting=$Greeting"\nsleep 0.1\necho "oops" >&2\nexit 3',
      env: { Greeting: 'hello world' },
    });
    h.manager.onMessage({ runTask: task });
    const done = await result(task.taskId);
    expect(done).toMatchObject({ outcome: 'FAILED', exitCode: 3, message: 'The script exited with code 3' });
    const lines = h.link.lines(task.taskId);
    expect(lines.map((l) => [l.stream, l.text])).toEqual([
      ['STDOUT', 'greeting=hello world'],
      ['STDERR', 'oops'],
      ['SYSTEM', 'The script exited with code 3'],
    ]);
    expect(lines.map((l) => l.seq)).toEqual(['1', '2', '3']);
    expect(done.lastLogSeq).toBe('3');
    expect(h.link.sent[0]).toEqual({ taskAccepted: { taskId: task.taskId } });
  });

  it('runs sh and python3 scripts and succeeds on exit code 0', async () => {
    const sh = runTask({ scriptLanguage: 'sh', script: 'echo "sh says $X"', env: { X: '1' } });
    const py = runTask({
      scriptLanguage: 'python',
      script: 'import os, sys\nprint("py says", os.environ["X"])\nprint("warn", file=sys.stderr)',
      env: { X: '2' },
    });
    h.manager.onMessage({ runTask: sh });
    h.manager.onMessage({ runTask: py });
    expect(await result(sh.taskId)).toMatchObject({ outcome: 'SUCCEEDED', exitCode: 0 });
    expect(await result(py.taskId)).toMatchObject({ outcome: 'SUCCEEDED', exitCode: 0 });
    expect(h.link.lines(sh.taskId).map((l) => l.text)).toEqual(['sh says 1']);
    expect(
      h.link
        .lines(py.taskId)
        .map((l) => [l.stream, l.text])
        .sort(),
    ).toEqual([
      ['STDERR', 'warn'],
      ['STDOUT', 'py says 2'],
    ]);
  });

  it('masks every sensitive value in lines and in the result message', async () => {
    const task = runTask({
      script: 'echo "pw=$Password and again $Password"\necho "token: $Token" >&2\necho "multi: line-two"\nexit 1',
      env: { Password: 's3cr3t!', Token: 'abc.def' },
      sensitiveValues: ['s3cr3t!', 'abc.def', 'line-one\nline-two'],
    });
    h.manager.onMessage({ runTask: task });
    await result(task.taskId);
    // stdout and stderr are separate pipes: their relative order is not guaranteed.
    const texts = h.link
      .lines(task.taskId)
      .map((l) => l.text)
      .sort();
    expect(texts).toEqual([
      'The script exited with code 1',
      'multi: ********',
      'pw=******** and again ********',
      'token: ********',
    ]);
    expect(JSON.stringify(h.link.sent)).not.toMatch(/s3cr3t|abc\.def|line-two/);
  });

  it('fails clearly when the interpreter is not installed', async () => {
    const task = runTask({ scriptLanguage: 'powershell', script: 'Write-Host hi', env: { PATH: '/nonexistent' } });
    h.manager.onMessage({ runTask: task });
    expect(await result(task.taskId)).toMatchObject({
      outcome: 'FAILED',
      exitCode: -1,
      message: 'pwsh is not installed on this machine (needed for powershell scripts)',
    });
  });

  it('kills the whole process group within 5 s when a running sleep is cancelled', async () => {
    const task = runTask({ script: 'sleep 30 &\necho "sleeper=$!"\nwait' });
    h.manager.onMessage({ runTask: task });
    const line = await waitFor(() => h.link.lines(task.taskId).find((l) => l.text?.startsWith('sleeper=')));
    const sleeperPid = Number(line.text?.slice('sleeper='.length));
    expect(isAlive(sleeperPid)).toBe(true);
    const started = Date.now();
    h.manager.onMessage({ cancelTask: { taskId: task.taskId, graceMs: 3000 } });
    expect(await result(task.taskId)).toMatchObject({ outcome: 'CANCELLED', message: 'The step was cancelled' });
    // Waited for longer than the bound, so a slow kill shows as its measured time, not a timeout.
    await waitFor(() => !isAlive(sleeperPid), 20_000);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('sends SIGKILL after the grace period when the script ignores SIGTERM', async () => {
    const task = runTask({ script: 'trap \'\' TERM\nsleep 30 &\necho "sleeper=$!"\nwait' });
    h.manager.onMessage({ runTask: task });
    const line = await waitFor(() => h.link.lines(task.taskId).find((l) => l.text?.startsWith('sleeper=')));
    const sleeperPid = Number(line.text?.slice('sleeper='.length));
    h.manager.onMessage({ cancelTask: { taskId: task.taskId, graceMs: 300 } });
    expect(await result(task.taskId)).toMatchObject({ outcome: 'CANCELLED' });
    await waitFor(() => !isAlive(sleeperPid), 3000);
  });

  it('fails a step that exceeds its timeout', async () => {
    const task = runTask({ script: 'sleep 30', timeoutSeconds: 1 });
    h.manager.onMessage({ runTask: task });
    expect(await result(task.taskId)).toMatchObject({ outcome: 'FAILED', message: 'The step timed out after 1 s' });
  });
});

describe('TaskManager substituted scripts (they hold Sensitive values)', () => {
  // Spares (spare-entries.ts) are empty files in scripts/.spare: they never hold a script.
  const scriptsIn = (home: string) => readdirSync(path.join(home, 'scripts')).filter((name) => name !== '.spare');
  const spareFilesIn = (home: string) => {
    const dir = path.join(home, 'scripts', '.spare');
    return existsSync(dir) ? readdirSync(dir).map((name) => statSync(path.join(dir, name))) : [];
  };

  it('writes the script 0600 outside the work folder and removes it as soon as the process ends', async () => {
    const task = runTask({ script: 'echo "secret=#{x}"\nsleep 0.3', sensitiveValues: ['#{x}'] });
    h.manager.onMessage({ runTask: task });
    const [file] = await waitFor(() => (scriptsIn(h.home).length > 0 ? scriptsIn(h.home) : undefined));
    expect(statSync(path.join(h.home, 'scripts', file!)).mode & 0o777).toBe(0o600);
    expect(await result(task.taskId)).toMatchObject({ outcome: 'SUCCEEDED' });
    expect(scriptsIn(h.home)).toEqual([]);
    expect(readdirSync(path.join(h.home, 'work', task.deploymentId, task.taskId))).toEqual([]);
  });

  it('takes a later script file and work folder from spares made ahead, and leaves no script in them', async () => {
    const first = runTask({ script: 'echo first' });
    h.manager.onMessage({ runTask: first });
    expect(await result(first.taskId)).toMatchObject({ outcome: 'SUCCEEDED' });
    // Ready, not only on disk: a spare file exists from its open, before it is closed and ready.
    await waitFor(() => h.manager.sparesReady.files === 2 && h.manager.sparesReady.folders === 4);
    const spareFiles = new Set(spareFilesIn(h.home).map((stat) => stat.ino));
    expect(spareFiles.size).toBe(2);
    const workSpares = path.join(h.home, 'work', '.spare');
    expect(readdirSync(workSpares)).toHaveLength(4);
    const spareFolders = new Set(readdirSync(workSpares).map((name) => statSync(path.join(workSpares, name)).ino));

    const task = runTask({
      deploymentId: 'deployment-2',
      script: 'echo "secret=#{x}"\nsleep 0.3',
      sensitiveValues: ['#{x}'],
    });
    h.manager.onMessage({ runTask: task });
    const [file] = await waitFor(() => (scriptsIn(h.home).length > 0 ? scriptsIn(h.home) : undefined));
    const script = statSync(path.join(h.home, 'scripts', file!));
    expect(spareFiles.has(script.ino)).toBe(true);
    expect(script.mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(h.home, 'scripts', file!), 'utf8')).toBe(task.script);
    expect(spareFolders.has(statSync(path.join(h.home, 'work', 'deployment-2')).ino)).toBe(true);
    expect(spareFolders.has(statSync(path.join(h.home, 'work', 'deployment-2', task.taskId)).ino)).toBe(true);
    expect(await result(task.taskId)).toMatchObject({ outcome: 'SUCCEEDED' });
    expect(scriptsIn(h.home)).toEqual([]);
    await waitFor(() => spareFilesIn(h.home).length === 2);
    expect(spareFilesIn(h.home).every((stat) => stat.size === 0)).toBe(true);
  });

  it('removes the script of a cancelled step and of a step that could not start', async () => {
    const task = runTask({ script: 'sleep 30' });
    h.manager.onMessage({ runTask: task });
    await waitFor(() => scriptsIn(h.home).length === 1);
    h.manager.onMessage({ cancelTask: { taskId: task.taskId, graceMs: 200 } });
    expect(await result(task.taskId)).toMatchObject({ outcome: 'CANCELLED' });
    expect(scriptsIn(h.home)).toEqual([]);
  });

  it('empties the scripts folder when an agent starts (a crash may have left one)', () => {
    writeFileSync(path.join(h.home, 'scripts', 'left-by-a-crash.sh'), 'echo secret', { mode: 0o600 });
    h.restart().recover();
    expect(scriptsIn(h.home)).toEqual([]);
  });
});

describe('TaskManager idempotency and acknowledgements', () => {
  it('does not run a task twice when RunTask is delivered again while running or after it finished', async () => {
    const marker = path.join(h.home, 'runs.txt');
    const task = runTask({ script: `echo run >> ${marker}\nsleep 0.3\necho done` });
    h.manager.onMessage({ runTask: task });
    h.manager.onMessage({ runTask: task });
    await result(task.taskId);
    h.manager.onMessage({ runTask: task });
    await waitFor(() => h.link.results(task.taskId).length === 2);
    expect(readFileSync(marker, 'utf8')).toBe('run\n');
    expect(h.link.sent.filter((m) => m.taskAccepted).length).toBe(2);
  });

  it('removes the tombstones and work folders of tasks past retention, while running and at start', async () => {
    // The agent's clock, moved by the test: retention is a day, and no test waits a day.
    let nowMs = Date.now();
    const retained = createHarness({}, { retentionMs: DAY_MS, pruneEveryMs: 0, now: () => nowMs });
    try {
      const finish = async (task: ReturnType<typeof runTask>) => {
        retained.manager.onMessage({ runTask: task });
        const done = await waitFor(() => retained.link.results(task.taskId)[0]);
        retained.manager.onMessage({ ackResult: { taskId: task.taskId } });
        retained.manager.onMessage({ ackLogs: { taskId: task.taskId, seq: String(done.lastLogSeq) } });
      };
      const workOf = (task: ReturnType<typeof runTask>) =>
        path.join(retained.home, 'work', task.deploymentId, task.taskId);
      const first = runTask({ deploymentId: 'old-deployment' });
      await finish(first);
      expect(existsSync(workOf(first))).toBe(true);
      expect(retained.journal.get(first.taskId)?.forgotten).toBe(true);
      nowMs += DAY_MS + 1;
      // The next task done with looks for what is past retention: the first one, not itself.
      const second = runTask({ deploymentId: 'new-deployment' });
      await finish(second);
      await waitFor(() => !existsSync(path.join(retained.home, 'work', 'old-deployment')));
      expect(retained.journal.get(first.taskId)).toBeUndefined();
      expect(retained.journal.get(second.taskId)?.forgotten).toBe(true);
      expect(existsSync(workOf(second))).toBe(true);
      // A restart after retention removes the rest.
      nowMs += DAY_MS + 1;
      retained.restart().recover();
      await waitFor(() => !existsSync(path.join(retained.home, 'work', 'new-deployment')));
      expect(retained.journal.all()).toEqual([]);
    } finally {
      await retained.close();
    }
  });

  it('forgets a task after both acknowledgements but still refuses to re-run it', async () => {
    const task = runTask({ script: 'echo once' });
    h.manager.onMessage({ runTask: task });
    const done = await result(task.taskId);
    const journalFile = path.join(h.home, 'tasks', 'journal.ndjson');
    const records = () =>
      readFileSync(journalFile, 'utf8')
        .split('\n')
        .filter((line) => line.startsWith(`{"state":{"taskId":"${task.taskId}"`)).length;
    const before = records();
    h.manager.onMessage({ ackResult: { taskId: task.taskId } });
    // One acknowledgement alone is kept in memory (a crash only means a harmless re-send).
    expect(records()).toBe(before);
    expect(h.journal.get(task.taskId)?.forgotten).toBe(false);
    h.manager.onMessage({ ackLogs: { taskId: task.taskId, seq: String(done.lastLogSeq) } });
    expect(h.journal.get(task.taskId)?.forgotten).toBe(true);
    expect(records()).toBe(before + 1);
    expect(h.journal.readChunks(task.taskId, 0, 1_000_000)).toEqual([]);
    h.manager.onMessage({ runTask: task });
    await waitFor(() => h.link.results(task.taskId).length === 2);
    expect(h.link.lines(task.taskId).length).toBe(1);
    expect(h.manager.runningTaskIds()).toEqual([]);
  });

  it('re-sends unacknowledged lines and the result after a reconnect', async () => {
    const task = runTask({ script: 'echo one\necho two' });
    h.manager.onMessage({ runTask: task });
    await result(task.taskId);
    h.manager.onMessage({ ackLogs: { taskId: task.taskId, seq: '1' } });
    h.manager.onDisconnected();
    h.link.sent.length = 0;
    const hello = h.manager.hello();
    expect(hello.unacknowledgedResults.map((r) => r.taskId)).toEqual([task.taskId]);
    h.manager.onWritable();
    expect(h.link.lines(task.taskId).map((l) => l.text)).toEqual(['two']);
    expect(h.link.results(task.taskId)).toEqual([]); // already carried by Hello
  });

  it('keeps lines on disk while disconnected and sends them once writable', async () => {
    h.link.connected = false;
    const task = runTask({ script: 'for i in 1 2 3; do echo line$i; done' });
    h.manager.onMessage({ runTask: task });
    await waitFor(() => h.journal.get(task.taskId)?.status === 'finished');
    expect(h.link.sent).toEqual([]);
    h.link.connected = true;
    h.manager.onDisconnected();
    h.manager.hello();
    h.manager.onWritable();
    expect(h.link.lines(task.taskId).map((l) => l.text)).toEqual(['line1', 'line2', 'line3']);
  });

  it('reports a task it was running when the agent died as FAILED without re-running it', async () => {
    const marker = path.join(h.home, 'runs.txt');
    const task = runTask({ script: `echo run >> ${marker}\nsleep 30` });
    h.manager.onMessage({ runTask: task });
    await waitFor(() => h.journal.get(task.taskId)?.pid);
    const scriptPid = h.journal.get(task.taskId)?.pid ?? 0;
    // Simulate a crash: a new manager on the same home, the old one never finishing.
    const restarted = h.restart();
    restarted.recover();
    const hello = restarted.hello();
    expect(hello.runningTaskIds).toEqual([]);
    expect(hello.unacknowledgedResults).toEqual([
      expect.objectContaining({ taskId: task.taskId, outcome: 'FAILED', message: 'agent restarted during the step' }),
    ]);
    await waitFor(() => !isAlive(scriptPid), 3000); // the orphaned group was killed
    restarted.onMessage({ runTask: task });
    expect(readFileSync(marker, 'utf8')).toBe('run\n');
  });

  it('records a cancel for an unknown task so a later RunTask does not run it', async () => {
    const task = runTask({ script: 'echo should-not-run' });
    h.manager.onMessage({ cancelTask: { taskId: task.taskId, graceMs: 0 } });
    h.manager.onMessage({ runTask: task });
    // The RunTask only re-sends the stored CANCELLED result.
    expect(h.link.results(task.taskId).map((r) => r.outcome)).toEqual(['CANCELLED', 'CANCELLED']);
    expect(h.link.sent.filter((m) => m.taskAccepted)).toEqual([]);
    expect(h.link.lines(task.taskId)).toEqual([]);
  });
});

describe('TaskManager packages', () => {
  const zip = buildZip([{ name: 'app/hello.txt', data: 'from the package' }]);
  const sha256 = createHash('sha256').update(zip).digest('hex');

  it('downloads, verifies, caches and extracts packages into the work folder', async () => {
    await h.close();
    h = createHarness({ 'Acme.Web@1.0.0': zip });
    const ref = { packageId: 'Acme.Web', version: '1.0.0', sha256, sizeBytes: String(zip.length), format: '' };
    const first = runTask({ script: 'cat "$PackageFolder/app/hello.txt"', packages: [ref] });
    h.manager.onMessage({ runTask: first });
    expect(await result(first.taskId)).toMatchObject({ outcome: 'SUCCEEDED' });
    expect(h.link.lines(first.taskId).map((l) => l.text)).toContain('from the package');
    const second = runTask({ script: 'cat "$PackageFolder_Acme_Web/app/hello.txt"', packages: [ref] });
    h.manager.onMessage({ runTask: second });
    expect(await result(second.taskId)).toMatchObject({ outcome: 'SUCCEEDED' });
    expect(h.downloads).toBe(1);
    const third = runTask({ script: 'true', packages: [ref], redownloadPackages: true });
    h.manager.onMessage({ runTask: third });
    await result(third.taskId);
    expect(h.downloads).toBe(2);
    expect(existsSync(path.join(h.home, 'work', 'deployment-1', first.taskId, 'Acme.Web', 'app', 'hello.txt'))).toBe(
      true,
    );
  });

  it('puts the first package’s folder where the control plane wrote its package folder token, and masks it in secrets', async () => {
    await h.close();
    h = createHarness({ 'Acme.Web@1.0.0': zip, 'Acme.Db@1.0.0': zip });
    const ref = (packageId: string) => ({
      packageId,
      version: '1.0.0',
      sha256,
      sizeBytes: String(zip.length),
      format: '',
    });
    const token = '#{CONTEXT.PackageFolder:t1}';
    const task = runTask({
      script: `cat "${token}/app/hello.txt"; echo; echo "$App"; echo '#{CONTEXT.PackageFolder}'; echo "key: $Key"`,
      env: { App: `${token}/app`, Key: `${token}/secret.key` },
      // A Sensitive value built on the folder is masked as it reads once the folder is in.
      sensitiveValues: [`${token}/secret.key`],
      packages: [ref('Acme.Web'), ref('Acme.Db')],
      packageFolderToken: token,
    });
    h.manager.onMessage({ runTask: task });
    expect(await result(task.taskId)).toMatchObject({ outcome: 'SUCCEEDED' });
    const folder = path.join(h.home, 'work', 'deployment-1', task.taskId, 'Acme.Web');
    expect(
      h.link
        .lines(task.taskId)
        .filter((l) => l.stream === 'STDOUT')
        .map((l) => l.text),
    ).toEqual(['from the package', `${folder}/app`, '#{CONTEXT.PackageFolder}', 'key: ********']);
  });

  it('drops cached package versions no task has used within retention, and downloads them again when needed', async () => {
    await h.close();
    // The agent's clock, moved by the test (retention: 600 s; times below in seconds from the start).
    let nowMs = Date.now();
    h = createHarness(
      { 'Acme.Web@1.0.0': zip, 'Acme.Web@2.0.0': zip },
      { retentionMs: 600_000, pruneEveryMs: 0, now: () => nowMs },
    );
    const ref = (version: string) => ({
      packageId: 'Acme.Web',
      version,
      sha256,
      sizeBytes: String(zip.length),
      format: '',
    });
    const done = async (task: ReturnType<typeof runTask>) => {
      h.manager.onMessage({ runTask: task });
      const finished = await result(task.taskId);
      h.manager.onMessage({ ackResult: { taskId: task.taskId } });
      h.manager.onMessage({ ackLogs: { taskId: task.taskId, seq: String(finished.lastLogSeq) } });
    };
    const cached = (version: string) => existsSync(path.join(h.home, 'packages', 'Acme.Web', version, 'package'));
    const pass = (seconds: number) => void (nowMs += seconds * 1000);
    // Each task done with looks for what is past retention (pruneEveryMs 0).
    await done(runTask({ script: 'true', packages: [ref('2.0.0')] })); // 0: downloaded
    pass(400);
    await done(runTask({ script: 'true', packages: [ref('1.0.0')] })); // 400: downloaded
    pass(400);
    await done(runTask({ script: 'true', packages: [ref('1.0.0')] })); // 800: 2.0.0 unused for 800
    await waitFor(() => !cached('2.0.0'));
    expect(cached('1.0.0')).toBe(true);
    expect(h.downloads).toBe(2); // the second use of 1.0.0 was a cache hit, and counts as use
    pass(400);
    await done(runTask({ script: 'true' })); // 1200: 1.0.0 downloaded 800 ago, but used 400 ago
    pass(700);
    await done(runTask({ script: 'true' })); // 1900: unused for 1100
    await waitFor(() => !existsSync(path.join(h.home, 'packages', 'Acme.Web')));
    await done(runTask({ script: 'true', packages: [ref('1.0.0')] }));
    expect(h.downloads).toBe(3);
  });

  it('fails the step when the sha256 does not match', async () => {
    await h.close();
    h = createHarness({ 'Acme.Web@1.0.0': zip });
    const ref = { packageId: 'Acme.Web', version: '1.0.0', sha256: '0'.repeat(64), sizeBytes: '0', format: 'zip' };
    const task = runTask({ packages: [ref] });
    h.manager.onMessage({ runTask: task });
    expect((await result(task.taskId)).message).toMatch(/failed verification: sha256 [0-9a-f]{64}, expected 0{64}/);
  });

  it('fails the step and runs nothing when the package holds a zip-slip entry', async () => {
    await h.close();
    const evil = buildZip([{ name: '../../escaped.txt', data: 'x' }]);
    h = createHarness({ 'Evil@1.0.0': evil });
    const ref = {
      packageId: 'Evil',
      version: '1.0.0',
      sha256: createHash('sha256').update(evil).digest('hex'),
      sizeBytes: '0',
      format: '',
    };
    const task = runTask({ script: 'echo script-ran', packages: [ref] });
    h.manager.onMessage({ runTask: task });
    expect(await result(task.taskId)).toMatchObject({
      outcome: 'FAILED',
      message: 'Archive refused: entry "../../escaped.txt" escapes the target folder',
    });
    expect(h.link.lines(task.taskId).map((l) => l.text)).not.toContain('script-ran');
    expect(existsSync(path.join(h.home, 'work', 'escaped.txt'))).toBe(false);
  });
});
