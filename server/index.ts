/**
 * phonelease/server: run the phone-session API over local phones.
 */
export { startServer, SERVER_DEFAULTS, type RunningServer, type ServerOptions } from './main.js';
export {
  runServerCommand,
  runAccountsCommand,
  runHostCommand,
  runDashboardCommand,
  UsageError,
  SERVER_USAGE,
  ACCOUNTS_USAGE,
  HOST_USAGE,
  DASHBOARD_USAGE,
} from './cli.js';
export type { NewAccount, CreatedAccount } from './runtime/accounts.js';
export { ManualClock, systemClock, type Clock } from './clock.js';
export type { DeviceBackend, DevicePhone, BootRequest, PhoneInput, ScreenSize } from './devices/types.js';
export { PhoneBootError } from './devices/types.js';
export { runDoctor, runDoctorCommand, formatFindings, type Finding, type DoctorOptions } from './doctor.js';
export { emulatorCapacity, type HostCapacity } from './devices/emulator/capacity.js';
