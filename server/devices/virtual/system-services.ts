/**
 * The system services the virtual phone publishes in its service manager, with their
 * binder interfaces: what `service list`, `cmd -l` and `dumpsys -l` report, and the names
 * `cmd`, `abb` and `dumpsys` accept.
 */
import type { SystemServiceState } from './device.js';

export const SYSTEM_SERVICES: ReadonlyArray<{ name: string; iface: string }> = [
  { name: 'SurfaceFlinger', iface: 'android.ui.ISurfaceComposer' },
  { name: 'accessibility', iface: 'android.view.accessibility.IAccessibilityManager' },
  { name: 'account', iface: 'android.accounts.IAccountManager' },
  { name: 'activity', iface: 'android.app.IActivityManager' },
  { name: 'alarm', iface: 'android.app.IAlarmManager' },
  { name: 'appops', iface: 'com.android.internal.app.IAppOpsService' },
  { name: 'audio', iface: 'android.media.IAudioService' },
  { name: 'battery', iface: '' },
  { name: 'batterystats', iface: 'com.android.internal.app.IBatteryStats' },
  { name: 'bluetooth_manager', iface: 'android.bluetooth.IBluetoothManager' },
  { name: 'clipboard', iface: 'android.content.IClipboard' },
  { name: 'connectivity', iface: 'android.net.IConnectivityManager' },
  { name: 'content', iface: 'android.content.IContentService' },
  { name: 'cpuinfo', iface: '' },
  { name: 'device_policy', iface: 'android.app.admin.IDevicePolicyManager' },
  { name: 'deviceidle', iface: 'android.os.IDeviceIdleController' },
  { name: 'display', iface: 'android.hardware.display.IDisplayManager' },
  { name: 'dropbox', iface: 'com.android.internal.os.IDropBoxManagerService' },
  { name: 'gfxinfo', iface: '' },
  { name: 'input', iface: 'android.hardware.input.IInputManager' },
  { name: 'input_method', iface: 'com.android.internal.view.IInputMethodManager' },
  { name: 'jobscheduler', iface: 'android.app.job.IJobScheduler' },
  { name: 'location', iface: 'android.location.ILocationManager' },
  { name: 'lock_settings', iface: 'com.android.internal.widget.ILockSettings' },
  { name: 'media_session', iface: 'android.media.session.ISessionManager' },
  { name: 'meminfo', iface: '' },
  { name: 'netpolicy', iface: 'android.net.INetworkPolicyManager' },
  { name: 'netstats', iface: 'android.net.INetworkStatsService' },
  { name: 'notification', iface: 'android.app.INotificationManager' },
  { name: 'package', iface: 'android.content.pm.IPackageManager' },
  { name: 'permission', iface: 'android.os.IPermissionController' },
  { name: 'phone', iface: 'com.android.internal.telephony.ITelephony' },
  { name: 'power', iface: 'android.os.IPowerManager' },
  { name: 'role', iface: 'android.app.role.IRoleManager' },
  { name: 'settings', iface: '' },
  { name: 'statusbar', iface: 'com.android.internal.statusbar.IStatusBarService' },
  { name: 'telephony.registry', iface: 'com.android.internal.telephony.ITelephonyRegistry' },
  { name: 'trust', iface: 'android.app.trust.ITrustManager' },
  { name: 'uimode', iface: 'android.app.IUiModeManager' },
  { name: 'usagestats', iface: 'android.app.usage.IUsageStatsManager' },
  { name: 'user', iface: 'android.os.IUserManager' },
  { name: 'vibrator_manager', iface: 'android.os.IVibratorManagerService' },
  { name: 'wifi', iface: 'android.net.wifi.IWifiManager' },
  { name: 'window', iface: 'android.view.IWindowManager' },
];

/** The services published right now (all of them once boot is over), by name. */
export function publishedServices(system: Pick<SystemServiceState, 'publishedServices'>): string[] {
  const published = system.publishedServices;
  return SYSTEM_SERVICES.map((s) => s.name).filter((name) => !published || published.has(name));
}

export function isPublished(system: Pick<SystemServiceState, 'publishedServices'>, name: string): boolean {
  return publishedServices(system).includes(name);
}
