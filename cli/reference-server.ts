// `llm-server-conformance reference-server`: the bundled reference server (fixtures/reference-server), so a newcomer
// tries the suite without a server of their own. It prints the URL and the command to run against it, and stays up
// until Ctrl-C. The server itself is the one the checks are proven on (correct; --fault NAME breaks one thing).
import { listFaults } from '../fixtures/reference-server/faults.ts';
import { parseArgs, UsageError as ServerUsageError, usage } from '../fixtures/reference-server/main.ts';
import { startReferenceServer } from '../fixtures/reference-server/server.ts';
import { EXIT } from './args.ts';

const COMMAND = 'llm-server-conformance reference-server';

export async function serveReference(
  argv: readonly string[],
  out: (line: string) => void = (l) => console.log(l),
): Promise<number> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(argv);
  } catch (e) {
    if (!(e instanceof ServerUsageError)) throw e;
    console.error(`llm-server-conformance: reference-server: ${e.message}\n${usage(COMMAND)}`);
    return EXIT.usage;
  }
  if (parsed.help) {
    out(usage(COMMAND).trimEnd());
    return EXIT.passed;
  }
  if (parsed.listFaults) {
    out(listFaults().join('\n'));
    return EXIT.passed;
  }
  let server: Awaited<ReturnType<typeof startReferenceServer>>;
  try {
    server = await startReferenceServer(parsed.options);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    console.error(
      `llm-server-conformance: reference-server: cannot listen on port ${parsed.options.port ?? 0}: ${code === 'EADDRINUSE' ? 'the port is in use (another --port, or 0 for any free one)' : (e as Error).message}`,
    );
    return EXIT.usage;
  }
  const faults = parsed.options.faults?.length ? ` with fault(s) ${parsed.options.faults.join(', ')} on` : '';
  out(`reference server listening at ${server.url}${faults} (model ${server.config.model})`);
  out(`run the suite against it in another terminal:  npx llm-server-conformance --base-url ${server.url}`);
  out('Ctrl-C stops it.');
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  // A stream still open must not hold the exit: close waits at most 2 s.
  await Promise.race([server.close(), new Promise((r) => setTimeout(r, 2_000).unref())]);
  return EXIT.passed;
}
