export type { DeviceBackend, DevicePhone, BootRequest, PhoneInput, ScreenSize } from './devices/types.js';
