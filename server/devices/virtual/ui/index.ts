/**
 * The virtual phone's UI side. The system side creates one per phone and drives it from
 * shell commands; see ./types.ts for the contract.
 */
import { VirtualPhoneUi } from './phone-ui.js';
import type { PhoneUi, PhoneUiHost, PhoneUiOptions } from './types.js';

export function createPhoneUi(host: PhoneUiHost, options: PhoneUiOptions): PhoneUi {
  return new VirtualPhoneUi(host, options);
}

export { KEYCODE } from './types.js';
export { APP_DETAILS_ACTIVITY, SETTINGS_ACTIVITIES, appInfoPackage } from './screens/settings.js';
export type * from './types.js';
