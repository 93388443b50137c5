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
  { name: 'activity_task', iface: 'android.app.IActivityTaskManager' },
  { name: 'alarm', iface: 'android.app.IAlarmManager' },
  { name: 'appops', iface: 'com.android.internal.app.IAppOpsService' },
  { name: 'appwidget', iface: 'com.android.internal.appwidget.IAppWidgetService' },
  { name: 'audio', iface: 'android.media.IAudioService' },
  { name: 'backup', iface: 'android.app.backup.IBackupManager' },
  { name: 'battery', iface: '' },
  { name: 'batterystats', iface: 'com.android.internal.app.IBatteryStats' },
  { name: 'bluetooth_manager', iface: 'android.bluetooth.IBluetoothManager' },
  { name: 'bugreport', iface: 'android.os.IDumpstate' },
  { name: 'clipboard', iface: 'android.content.IClipboard' },
  { name: 'connectivity', iface: 'android.net.IConnectivityManager' },
  { name: 'content', iface: 'android.content.IContentService' },
  { name: 'cpuinfo', iface: '' },
  { name: 'dbinfo', iface: '' },
  { name: 'device_policy', iface: 'android.app.admin.IDevicePolicyManager' },
  { name: 'deviceidle', iface: 'android.os.IDeviceIdleController' },
  { name: 'diskstats', iface: '' },
  { name: 'display', iface: 'android.hardware.display.IDisplayManager' },
  { name: 'dropbox', iface: 'com.android.internal.os.IDropBoxManagerService' },
  { name: 'gfxinfo', iface: '' },
  { name: 'gpu', iface: 'android.graphicsenv.IGpuService' },
  { name: 'graphicsstats', iface: 'android.view.IGraphicsStats' },
  { name: 'input', iface: 'android.hardware.input.IInputManager' },
  { name: 'input_method', iface: 'com.android.internal.view.IInputMethodManager' },
  { name: 'jobscheduler', iface: 'android.app.job.IJobScheduler' },
  { name: 'location', iface: 'android.location.ILocationManager' },
  { name: 'lock_settings', iface: 'com.android.internal.widget.ILockSettings' },
  { name: 'logcat', iface: 'android.os.logcat.ILogcatManagerService' },
  { name: 'media.camera', iface: 'android.hardware.ICameraService' },
  { name: 'media_projection', iface: 'android.media.projection.IMediaProjectionManager' },
  { name: 'media_session', iface: 'android.media.session.ISessionManager' },
  { name: 'meminfo', iface: '' },
  { name: 'mount', iface: 'android.os.storage.IStorageManager' },
  { name: 'netpolicy', iface: 'android.net.INetworkPolicyManager' },
  { name: 'netstats', iface: 'android.net.INetworkStatsService' },
  { name: 'notification', iface: 'android.app.INotificationManager' },
  { name: 'overlay', iface: 'android.content.om.IOverlayManager' },
  { name: 'package', iface: 'android.content.pm.IPackageManager' },
  { name: 'permission', iface: 'android.os.IPermissionController' },
  { name: 'permissionmgr', iface: 'android.permission.IPermissionManager' },
  { name: 'phone', iface: 'com.android.internal.telephony.ITelephony' },
  { name: 'power', iface: 'android.os.IPowerManager' },
  { name: 'processinfo', iface: 'android.os.IProcessInfoService' },
  { name: 'procstats', iface: 'com.android.internal.app.procstats.IProcessStats' },
  { name: 'role', iface: 'android.app.role.IRoleManager' },
  { name: 'sensorservice', iface: 'android.gui.SensorServer' },
  { name: 'settings', iface: '' },
  { name: 'shortcut', iface: 'android.content.pm.IShortcutService' },
  { name: 'statusbar', iface: 'com.android.internal.statusbar.IStatusBarService' },
  { name: 'storagestats', iface: 'android.app.usage.IStorageStatsManager' },
  { name: 'telecom', iface: 'com.android.internal.telecom.ITelecomService' },
  { name: 'telephony.registry', iface: 'com.android.internal.telephony.ITelephonyRegistry' },
  { name: 'textservices', iface: 'com.android.internal.textservice.ITextServicesManager' },
  { name: 'thermalservice', iface: 'android.os.IThermalService' },
  { name: 'trust', iface: 'android.app.trust.ITrustManager' },
  { name: 'uimode', iface: 'android.app.IUiModeManager' },
  { name: 'uri_grants', iface: 'android.app.IUriGrantsManager' },
  { name: 'usagestats', iface: 'android.app.usage.IUsageStatsManager' },
  { name: 'usb', iface: 'android.hardware.usb.IUsbManager' },
  { name: 'user', iface: 'android.os.IUserManager' },
  { name: 'vibrator_manager', iface: 'android.os.IVibratorManagerService' },
  { name: 'wallpaper', iface: 'android.app.IWallpaperManager' },
  { name: 'webviewupdate', iface: 'android.webkit.IWebViewUpdateService' },
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
