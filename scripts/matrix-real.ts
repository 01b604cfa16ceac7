// The real llama-server column of `npm run matrix` (placeholder until the shared llama.cpp module lands).
export interface RealColumn {
  /** Project id the column runs as (absent when there is no real server to run). */
  project?: string;
  /** Environment for its `vitest run` (e.g. SERVERS_FILE naming its generated profile). */
  env?: NodeJS.ProcessEnv;
  /** One line for the console: what runs, or why nothing does. */
  note?: string;
  stop(): Promise<void>;
}

export async function realLlamaColumn(_out: string): Promise<RealColumn> {
  return { note: 'real llama-server column: not available yet', stop: async () => undefined };
}
