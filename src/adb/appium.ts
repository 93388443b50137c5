/**
 * Capabilities for Appium's UiAutomator2 driver pointed at a leased phone through its local
 * ADB tunnel. Appium talks to the stock adb server, so the serial is the tunnel's
 * `127.0.0.1:<port>` (not an emulator-NNNN serial: appium-adb would try the emulator
 * console) and adbPort is the adb server port in use.
 */

export interface AppiumCapabilityOptions {
  /** The phone's serial as stock adb knows it (from Lease.adbSerial()). */
  udid: string;
  /** Host port for the UiAutomator2 server forward (a free one). */
  systemPort: number;
  /** The adb server port (ANDROID_ADB_SERVER_PORT or 5037). */
  adbPort: number;
  /** Seconds Appium waits for the next command before ending its session (default 120). */
  newCommandTimeout?: number;
  /** Skip installing the UiAutomator2 server and the settings app (only when the phone has them; default false). */
  skipInstallation?: boolean;
  /** More capabilities, merged last (`appium:` prefixes as you write them). */
  extra?: Record<string, unknown>;
}

export type AppiumCapabilities = Record<string, unknown> & {
  platformName: 'Android';
  'appium:automationName': 'UiAutomator2';
  'appium:udid': string;
};

export function appiumCapabilities(options: AppiumCapabilityOptions): AppiumCapabilities {
  const skip = options.skipInstallation ?? false;
  return {
    platformName: 'Android',
    'appium:automationName': 'UiAutomator2',
    'appium:udid': options.udid,
    'appium:systemPort': options.systemPort,
    'appium:adbPort': options.adbPort,
    'appium:newCommandTimeout': options.newCommandTimeout ?? 120,
    // A disposable phone is fresh every time: resetting it or its apps buys nothing.
    'appium:noReset': true,
    'appium:fullReset': false,
    // Network round trips through the tunnel: give the server time to come up.
    'appium:uiautomator2ServerLaunchTimeout': 60_000,
    'appium:uiautomator2ServerInstallTimeout': 120_000,
    'appium:adbExecTimeout': 60_000,
    'appium:disableWindowAnimation': true,
    'appium:ignoreHiddenApiPolicyError': true,
    ...(skip ? { 'appium:skipServerInstallation': true, 'appium:skipDeviceInitialization': true } : {}),
    ...options.extra,
  } as AppiumCapabilities;
}
