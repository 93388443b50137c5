/**
 * How many emulators a host can run: about 2 cores and 3 GB of memory each (reference,
 * "Times and sizes"). Used for --phones when it is not given, and printed at start.
 */
import { availableParallelism, totalmem } from 'node:os';

export const CORES_PER_EMULATOR = 2;
export const BYTES_PER_EMULATOR = 3 * 1024 ** 3;

export interface HostCapacity {
  phones: number;
  cores: number;
  memoryBytes: number;
  /** One line for people: what the host has and what that fits. */
  summary: string;
}

export function emulatorCapacity(
  host: { cores: number; memoryBytes: number } = { cores: availableParallelism(), memoryBytes: totalmem() },
): HostCapacity {
  const byCores = Math.floor(host.cores / CORES_PER_EMULATOR);
  const byMemory = Math.floor(host.memoryBytes / BYTES_PER_EMULATOR);
  const phones = Math.max(1, Math.min(byCores, byMemory));
  const gb = (host.memoryBytes / 1024 ** 3).toFixed(1);
  const limit = byCores <= byMemory ? 'cores' : 'memory';
  return {
    phones,
    cores: host.cores,
    memoryBytes: host.memoryBytes,
    summary: `${phones} emulator${phones === 1 ? '' : 's'} at once (${host.cores} cores, ${gb} GB of memory; about ${CORES_PER_EMULATOR} cores and 3 GB each, limited by ${limit}${Math.min(byCores, byMemory) < 1 ? '; this host is below the size of one emulator' : ''})`,
  };
}
