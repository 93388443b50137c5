/**
 * `dumpsys`: the services tools and Appium read (window, power, package, activity,
 * deviceidle, display, input_method, battery, ...), in Android 14's layout.
 */
import { createHash } from 'node:crypto';
import { parseComponent, shortComponent } from '../../activity.js';
import type { ComponentName } from '../../activity.js';
import { DEVICE } from '../../identity.js';
import { metrics } from '../../ui/theme.js';
import type { PowerState, TaskInfo, TaskList } from '../../ui/types.js';
import { lockKind } from '../../lock-settings.js';
import { locationSwitch, userRotation, wifiSwitch } from '../../settings.js';
import { formatUid, PackageManager, RUNTIME_PERMISSIONS } from '../../packages.js';
import type { PackageRecord } from '../../packages.js';
import type { CommandContext, CommandFn } from '../command.js';
import { isPublished, publishedServices } from '../../system-services.js';
import { fullDate } from './format.js';

/** A stable 7-hex-digit "identity hash" like the ones in ActivityRecord{...}. */
function hashId(...parts: string[]): string {
  return createHash('md5').update(parts.join('\0')).digest('hex').slice(0, 7);
}

function focus(ctx: CommandContext): ComponentName {
  const f = ctx.device.ui.foreground();
  return { pkg: f.package, cls: f.activity };
}

// ---- tasks, as the activity manager prints them ----
// The ids come from the phone's UI, which gives each task its id when it is created
// (PhoneUi.taskList()); every listing below (dumpsys activity, dumpsys window, am stack list)
// reads them from there, so one task has one id everywhere.

/** ActivityRecord.toString(): `ActivityRecord{hash u0 pkg/.Activity tTASKID}`. */
export function activityRecord(t: TaskInfo, at = t.activities.length - 1): string {
  const a = t.activities[at]!;
  const c = { pkg: t.package, cls: a.activity };
  return `ActivityRecord{${hashId('ar', c.pkg, c.cls, String(a.instance))} u0 ${shortComponent(c)} t${t.id}}`;
}

/**
 * A task's affinity: since Android 12 ActivityRecord.computeTaskAffinity() prefixes the
 * app's uid (`10153:com.android.chrome`). Launcher3 declares `android:taskAffinity=""`, so
 * its task has none, and Task.toString() names its intent's component instead (`I=`).
 */
function affinity(ctx: CommandContext, t: TaskInfo): string | null {
  return t.type === 'home' ? null : `${ctx.device.packages.get(t.package)?.uid ?? 10153}:${t.package}`;
}

/** Task.toString(), the short form that RecentTasks prints: `Task{hash #ID type=T A=UID:PKG}`. */
export function taskName(ctx: CommandContext, t: TaskInfo): string {
  const a = affinity(ctx, t);
  const root = { pkg: t.package, cls: t.activities[0]!.activity };
  return `Task{${hashId('task', String(t.id))} #${t.id} type=${t.type} ${a !== null ? `A=${a}` : `I=${shortComponent(root)}`}}`;
}

/**
 * Task.toFullString(), as `dumpsys activity activities` heads each task with it: the short
 * form, then the user, the root task when it is another (the launcher's task sits in the
 * home root task), visibility, windowing mode and the number of children.
 */
function taskFullName(ctx: CommandContext, t: TaskInfo, children: number): string {
  const root = t.rootId !== t.id ? ` rootTaskId=${t.rootId}` : '';
  return `${taskName(ctx, t).slice(0, -1)} U=0${root} visible=${t.visible} visibleRequested=${t.visible} mode=fullscreen translucent=false sz=${children}}`;
}

/** The home root task (created with the display; it has no intent, so no A= or I=). */
function homeRootName(home: TaskInfo): string {
  return `Task{${hashId('task', String(home.rootId))} #${home.rootId} type=home U=0 visible=${home.visible} visibleRequested=${home.visible} mode=fullscreen translucent=false sz=1}`;
}

/** The task shown now: the one in front, or home. */
export function frontTask(tasks: TaskList): TaskInfo {
  return tasks.stack.find((t) => t.visible) ?? tasks.stack[0]!;
}

/** The display's size now, as a task's bounds give it: turned while the display is sideways. */
export function displayBounds(ctx: CommandContext): { w: number; h: number } {
  const { width, height } = ctx.device.display();
  return turned({ w: width, h: height }, ctx.device.ui.rotation?.() ?? 0);
}

/**
 * Configuration.toString() of a full-screen window container of `activityType` (the global
 * configuration is `undefined`): what `dumpsys window` and `am stack list` print.
 */
export function configuration(ctx: CommandContext, activityType: 'undefined' | 'home' | 'standard'): string {
  const { density } = ctx.device.display();
  const rotation = ctx.device.ui.rotation?.() ?? 0;
  const cur = displayBounds(ctx);
  return `{1.0 ?mcc?mnc [en_US] ldltr sw${Math.round((Math.min(cur.w, cur.h) * 160) / density)}dp w${Math.round((cur.w * 160) / density)}dp h${Math.round((cur.h * 160) / density)}dp ${density}dpi nrml ${rotation % 2 ? 'land' : 'port'} finger -keyb/v/h -nav/h winConfig={ mBounds=Rect(0, 0 - ${cur.w}, ${cur.h}) mAppBounds=Rect(0, 0 - ${cur.w}, ${cur.h}) mMaxBounds=Rect(0, 0 - ${cur.w}, ${cur.h}) mDisplayRotation=ROTATION_${rotation * 90} mWindowingMode=fullscreen mActivityType=${activityType} mAlwaysOnTop=undefined mRotation=ROTATION_${rotation * 90}} s.6 fontWeightAdjustment=0}`;
}

/** The display's vsync period in ns (presDeadline, SurfaceFlinger's --latency) and its rate as dumps print it. */
const VSYNC_PERIOD_NS = Math.floor(1e9 / DEVICE.refreshRate);
const REFRESH_FPS = DEVICE.refreshRate.toFixed(1);

/** A size as the display has it at `rotation`: sideways while it is turned a quarter. */
function turned(size: { w: number; h: number }, rotation: number): { w: number; h: number } {
  return rotation % 2 ? { w: size.h, h: size.w } : size;
}

function dumpWindow(ctx: CommandContext, args: string[]): string {
  const f = focus(ctx);
  const tasks = ctx.device.ui.taskList();
  const front = frontTask(tasks);
  const focusedApp = activityRecord(front);
  // Every app task is a root task of its own; the launcher's sits in the home root task.
  const rootTasks = new Set(tasks.stack.map((t) => t.rootId)).size;
  const sys = ctx.device.system;
  const { width, height, density } = ctx.device.display();
  const base = { w: width, h: height };
  const rotation = ctx.device.ui.rotation?.() ?? 0;
  const cur = turned(base, rotation);
  const statusBar = ctx.device.ui.statusBarHeight;
  const settings = ctx.device.settings;
  const lockedRotation = userRotation.rotation(settings);
  const navBar = metrics(cur.w, cur.h, density).navBar;
  // A window's frames, as Android 14 lists them (Appium's getSystemBars() reads frame=).
  const frames = (l: number, t: number, r: number, b: number) =>
    `Frames: parent=[${l},${t}][${r},${b}] display=[${l},${t}][${r},${b}] frame=[${l},${t}][${r},${b}] last=[${l},${t}][${r},${b}] insetsChanged=false`;
  const appWindow = `Window{${hashId('win', f.pkg, f.cls)} u0 ${f.pkg}/${f.cls}}`;
  const power = powerOf(ctx);
  const kind = lockKind(sys.lock);
  const secure = sys.lock.credential !== null;
  // The lock screen lives in SystemUI's NotificationShade window, which then has the focus.
  const windowLine = power.keyguard ? `Window{${hashId('win', 'shade')} u0 NotificationShade}` : appWindow;
  const displays = `WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)
  Display: mDisplayId=0 rootTasks=${rootTasks}
    init=${DEVICE.width}x${DEVICE.height} ${DEVICE.density}dpi base=${base.w}x${base.h} ${density}dpi cur=${cur.w}x${cur.h} app=${cur.w}x${cur.h - statusBar} rng=${base.w}x${base.w - statusBar}-${base.h}x${base.h - statusBar}
    deferred=false mLayoutNeeded=false mTouchExcludeRegion=SkRegion((0,0,${cur.w},${cur.h}))
    DisplayRotation
      mCurrentAppOrientation=SCREEN_ORIENTATION_UNSPECIFIED
      mLastOrientation=-1
      mRotation=${rotation} mDeferredRotationPauseCount=0
      mLandscapeRotation=ROTATION_90 mSeascapeRotation=ROTATION_270
      mPortraitRotation=ROTATION_0 mUpsideDownRotation=ROTATION_180
      mSupportAutoRotation=true
      mUserRotationMode=${settings.get('system', 'accelerometer_rotation') === '1' ? 'USER_ROTATION_FREE' : 'USER_ROTATION_LOCKED'} mUserRotation=ROTATION_${lockedRotation * 90} mCameraRotationMode=0 mAllowAllRotations=false
      mFixedToUserRotation=false

  mLayoutSeq=210
  mCurrentFocus=${windowLine}
  mFocusedApp=${focusedApp}
  mHoldScreenWindow=null
  mObscuringWindow=null
`;
  const policy = `WINDOW MANAGER POLICY STATE (dumpsys window policy)
    mSafeMode=false mSystemReady=true mSystemBooted=true
    mCameraLensCoverState=LENS_COVER_ABSENT
    mWakeGestureEnabledSetting=true
    mSupportAutoRotation=true mOrientationSensorEnabled=false
    mUiMode=UI_MODE_TYPE_NORMAL mDockMode=EXTRA_DOCK_STATE_UNDOCKED
    mLidState=LID_ABSENT mLidOpenRotation=-1
    mKeyguardDrawComplete=true mWindowManagerDrawComplete=true
    mShowingDream=false mDreamingLockscreen=false
    mShowingLockscreen=${power.keyguard}
    mTopFullscreenOpaqueWindowState=${appWindow}
    KeyguardServiceDelegate
      showing=${power.keyguard}
      inputRestricted=${power.keyguard}
      occluded=false
      secure=${secure}
      dreaming=false
      systemIsReady=true
      deviceHasKeyguard=${kind !== 'none'}
      enabled=${kind !== 'none'}
      offReason=${power.awake ? 'OFF_BECAUSE_OF_USER' : 'OFF_BECAUSE_OF_POWER_BUTTON'}
      currentUser=0
      bootCompleted=true
      screenState=${power.awake ? 'SCREEN_STATE_ON' : 'SCREEN_STATE_OFF'}
      interactiveState=${power.awake ? 'INTERACTIVE_STATE_AWAKE' : 'INTERACTIVE_STATE_SLEEP'}
      KeyguardStateMonitor
        mIsShowing=${power.keyguard}
        mSimSecure=false
        mInputRestricted=${power.keyguard}
        mTrusted=false
        mCurrentUserId=0
    mScreenOnEarly=${power.awake} mScreenOnFully=${power.awake}
    mKeyguardDrawComplete=true mWindowManagerDrawComplete=true
`;
  // The status and navigation bars are in no task: WindowState.getRootTaskId() is INVALID_TASK_ID.
  const windows = `WINDOW MANAGER WINDOWS (dumpsys window windows)
  Window #0 Window{${hashId('win', 'nav')} u0 NavigationBar0}:
    mDisplayId=0 rootTaskId=-1 mSession=Session{${hashId('s', 'systemui')} 1120:u0a10201} mClient=android.os.BinderProxy@${hashId('b', 'nav')}
    mOwnerUid=10201 showForAllUsers=true package=com.android.systemui appop=NONE
    mAttrs={(0,0)(fillxfill) gr=BOTTOM CENTER_VERTICAL sim={adjust=pan} ty=NAVIGATION_BAR fmt=TRANSLUCENT}
    mViewVisibility=0x0 mHaveFrame=true mObscured=false
    ${frames(0, cur.h - navBar, cur.w, cur.h)}
  Window #1 Window{${hashId('win', 'status')} u0 StatusBar}:
    mDisplayId=0 rootTaskId=-1 mSession=Session{${hashId('s', 'systemui')} 1120:u0a10201} mClient=android.os.BinderProxy@${hashId('b', 'status')}
    mOwnerUid=10201 showForAllUsers=true package=com.android.systemui appop=NONE
    mAttrs={(0,0)(fillx${statusBar}) gr=TOP CENTER_VERTICAL sim={adjust=pan} ty=STATUS_BAR fmt=TRANSLUCENT}
    mViewVisibility=0x0 mHaveFrame=true mObscured=false
    ${frames(0, 0, cur.w, statusBar)}
  Window #2 ${appWindow}:
    mDisplayId=0 rootTaskId=${front.rootId} mSession=Session{${hashId('s', f.pkg)}} mClient=android.os.BinderProxy@${hashId('b', f.pkg)}
    mOwnerUid=${ctx.device.packages.get(f.pkg)?.uid ?? 10153} showForAllUsers=false package=${f.pkg} appop=NONE
    mAttrs={(0,0)(fillxfill) sim={adjust=resize} ty=BASE_APPLICATION fmt=TRANSLUCENT}
    mViewVisibility=0x0 mHaveFrame=true mObscured=false
    ${frames(0, 0, cur.w, cur.h)}
    mHasSurface=true isReadyForDisplay()=true mWindowRemovalAllowed=false
    isOnScreen=true
    isVisible=true

  mGlobalConfiguration=${configuration(ctx, 'undefined')}
  mHasPermanentDpad=false
  mTopFocusedDisplayId=0
  mInputMethodWindow=null
  mCurrentFocus=${windowLine}
  mFocusedApp=${focusedApp}
`;
  switch (args[0]) {
    case 'displays':
    case 'd':
      return displays;
    case 'windows':
    case 'w':
      return windows;
    case 'policy':
    case 'p':
      return policy;
    case 'lastanr':
    case 'l':
      return 'WINDOW MANAGER LAST ANR (dumpsys window lastanr)\n  <no ANR has occurred since boot>\n';
    default:
      return `${policy}\n${displays}\n${windows}`;
  }
}

/** The screen's power and lock state; awake and unlocked for a UI that does not say. */
function powerOf(ctx: CommandContext): PowerState {
  return ctx.device.ui.powerState?.() ?? { awake: true, keyguard: false, bouncer: false };
}

/** config_lowBatteryWarningLevel: BatteryService says the level is low at 15% and below, unplugged. */
const LOW_BATTERY_WARNING_LEVEL = 15;

function dumpPower(ctx: CommandContext): string {
  const { awake } = powerOf(ctx);
  const wakefulness = awake ? 'Awake' : 'Asleep';
  // What PowerManagerService reads from BatteryService (forced values included).
  const battery = ctx.device.battery.values();
  const plugType = ctx.device.battery.plugType();
  return `POWER MANAGER (dumpsys power)

Power Manager State:
  Settings power_manager_constants:
    no_cached_wake_locks=true
  mDirty=0x0
  mWakefulness=${wakefulness}
  mWakefulnessChanging=false
  mIsPowered=${plugType !== 0}
  mPlugType=${plugType}
  mBatteryLevel=${battery.level}
  mBatteryLevelLow=${plugType === 0 && battery.level <= LOW_BATTERY_WARNING_LEVEL}
  mStayOn=true
  mProximityPositive=false
  mBootCompleted=true
  mSystemReady=true
  mHalAutoSuspendModeEnabled=false
  mHalInteractiveModeEnabled=true
  mWakeLockSummary=0x0
  mNotifyLongScheduled=(none)
  mUserActivitySummary=0x1
  mRequestWaitForNegativeProximity=false
  mSandmanScheduled=false
  mBatteryLowWarningTriggered=false
  mDeviceIdleMode=false
  mLightDeviceIdleMode=false
  mLowPowerModeEnabled=false
  mScreenBrightnessSetting=102
  mDisplayReady=true
  mHoldingWakeLockSuspendBlocker=false
  mHoldingDisplaySuspendBlocker=${awake}

Wakefulness: ${wakefulness}
Interactive: ${awake}
Display Power: state=${awake ? 'ON' : 'OFF'}
`;
}

export function dumpPackage(ctx: CommandContext, p: PackageRecord): string {
  const launcher = p.launcherActivity ? shortComponent({ pkg: p.name, cls: p.launcherActivity }) : null;
  const resolver = launcher
    ? `Activity Resolver Table:
  Non-Data Actions:
      android.intent.action.MAIN:
        ${hashId('res', p.name)} ${launcher} filter ${hashId('filter', p.name)}
          Action: "android.intent.action.MAIN"
          Category: "android.intent.category.LAUNCHER"

`
    : '';
  const install = p.requestedPermissions.filter((x) => !RUNTIME_PERMISSIONS.has(x));
  const runtime = p.requestedPermissions.filter((x) => RUNTIME_PERMISSIONS.has(x));
  const flags = `[ ${p.system ? 'SYSTEM ' : ''}${p.debuggable ? 'DEBUGGABLE ' : ''}HAS_CODE ALLOW_CLEAR_USER_DATA ALLOW_BACKUP ]`;
  const hash = PackageManager.hashOf(p.name);
  let out = `${resolver}Key Set Manager:
  [${p.name}]
      Signing KeySets: ${20 + (parseInt(hash, 16) % 80)}

Packages:
  Package [${p.name}] (${hash}):
    userId=${p.uid}
    pkg=Package{${hashId('pkg', p.name)} ${p.name}}
    codePath=${p.codePath}
    resourcePath=${p.codePath}
    legacyNativeLibraryDir=${p.codePath}/lib
    extractNativeLibs=false
    primaryCpuAbi=null
    secondaryCpuAbi=null
    cpuAbiOverride=null
    versionCode=${p.versionCode} minSdk=${p.minSdk ?? 1} targetSdk=${p.targetSdk ?? 34}
    minExtensionVersions=[]
    versionName=${p.versionName}
    usesNonSdkApi=false
    hiddenApiEnforcementPolicy=2
    splits=[${['base', ...p.splits].join(', ')}]
    apkSigningVersion=2
    flags=${flags}
    privateFlags=[ PRIVATE_FLAG_ACTIVITIES_RESIZE_MODE_RESIZEABLE_VIA_SDK_VERSION ALLOW_AUDIO_PLAYBACK_CAPTURE ]
    forceQueryable=false
    dataDir=/data/user/0/${p.name}
    supportsScreens=[small, medium, large, xlarge, resizeable, anyDensity]
    timeStamp=${fullDate(p.lastUpdateMs)}
    lastUpdateTime=${fullDate(p.lastUpdateMs)}
    installerPackageName=${p.installer ?? 'null'}
    packageSource=0
    signatures=PackageSignatures{${hashId('sig', p.name)} version:2, signatures:[${hashId('cert', p.name)}], past signatures:[]}
    installPermissionsFixed=true
    pkgFlags=${flags}
`;
  if (p.requestedPermissions.length > 0) {
    out += `    requested permissions:\n${p.requestedPermissions.map((x) => `      ${x}\n`).join('')}`;
  }
  if (install.length > 0)
    out += `    install permissions:\n${install.map((x) => `      ${x}: granted=true\n`).join('')}`;
  out += `    User 0: ceDataInode=${100000 + (p.uid % 100000)} installed=true hidden=false suspended=false distractionFlags=0 stopped=${p.stopped} notLaunched=false enabled=${p.enabled ? 0 : 3} instant=false virtual=false quarantined=false
      installReason=0
      dataDir=/data/user/0/${p.name}
      firstInstallTime=${fullDate(p.firstInstallMs)}
      uninstallReason=0
      gids=[3003]
`;
  if (runtime.length > 0) {
    out += `      runtime permissions:\n${runtime.map((x) => `        ${x}: granted=${p.granted.has(x)}, flags=[ USER_SENSITIVE_WHEN_GRANTED|USER_SENSITIVE_WHEN_DENIED]\n`).join('')}`;
  }
  out += `
Dexopt state:
  [${p.name}]
    path: ${p.apkPath}
      arm64: [status=verify] [reason=install]
`;
  return out;
}

function serviceMatches(filter: string | undefined, pkg: string, cls: string): boolean {
  if (!filter) return true;
  const c = parseComponent(filter);
  if (c) return c.pkg === pkg && c.cls === cls;
  return pkg === filter || cls.includes(filter);
}

/** `dumpsys activity` sections of Android 14 that the virtual phone does not model. */
const UNMODELED_ACTIVITY_SECTIONS = new Set([
  'allowed-associations',
  'app-restrictions',
  'as',
  'associations',
  'binder-proxies',
  'broadcast-stats',
  'capabilities',
  'containers',
  'exit-info',
  'lmk',
  'o',
  'oom',
  'perm',
  'permissions',
  'prov',
  'provider',
  'providers',
  'settings',
  'starter',
  'timers',
  'users',
]);

function dumpActivity(ctx: CommandContext, args: string[]): string {
  const device = ctx.device;
  const section = args[0] ?? '';
  const f = focus(ctx);
  const services = (): string => {
    const filter = args[1];
    const list = [...device.activity.services.values()].filter((s) => serviceMatches(filter, s.pkg, s.cls));
    let out = 'ACTIVITY MANAGER SERVICES (dumpsys activity services)\n';
    if (list.length === 0) return `${out}  (nothing)\n`;
    out += '  User 0 active services:\n';
    for (const s of list) {
      const pkg = device.packages.get(s.pkg);
      const proc = device.processes.list().find((x) => x.name === s.pkg);
      const ago = Math.max(0, device.now() - s.startedMs);
      const age = `-${Math.floor(ago / 1000)}s${ago % 1000}ms`;
      out += `  * ServiceRecord{${hashId('svc', s.pkg, s.cls)} u0 ${shortComponent(s)}}
    intent={cmp=${shortComponent(s)}}
    packageName=${s.pkg}
    processName=${s.pkg}
    baseDir=${pkg?.apkPath ?? ''}
    dataDir=/data/user/0/${s.pkg}
    app=ProcessRecord{${hashId('proc', s.pkg)} ${proc?.pid ?? 0}:${s.pkg}/${formatUid(pkg?.uid ?? 10000)}}
    isForeground=${s.foreground}${s.foreground ? ` foregroundId=1 foregroundNoti=Notification(channel=${s.pkg} shortcut=null contentView=null vibrate=null sound=null defaults=0x0 flags=0x62 color=0x00000000 vis=PRIVATE) types=0x00000000` : ''}
    createTime=${age} startingBgTimeout=--
    lastActivity=${age} restartTime=${age} createdFromFg=true
    startRequested=true delayedStop=false stopIfKilled=false callStart=true lastStartId=1

`;
    }
    return out;
  };
  const tasks = device.ui.taskList();
  const front = frontTask(tasks);
  // `dumpsys activity activities|recents PKG` lists only that package's tasks.
  const dumpPackage = args[1];
  const listed = (t: TaskInfo) => dumpPackage === undefined || t.package === dumpPackage;
  const activities = (): string => {
    const ar = activityRecord(front);
    // RootWindowContainer.dumpActivities: every root task on the display, top to bottom (the
    // order the display stacks them), each a Task.dump: the task's line (Task.toFullString),
    // then its activities top to bottom as `* Hist  #N:`, N counted from the task's root. The
    // launcher's task is a leaf task inside the home root task, so it is nested one level.
    const blocks: string[] = [];
    for (const t of tasks.stack.filter(listed)) {
      const home = t.rootId !== t.id;
      const indent = home ? '    ' : '  ';
      let block = home
        ? `  * ${homeRootName(t)}
`
        : '';
      block += `${indent}* ${taskFullName(ctx, t, t.activities.length)}
${indent}  isSleeping=false
`;
      if (t === front)
        block += `${indent}  topResumedActivity=${ar}
`;
      for (let i = t.activities.length - 1; i >= 0; i--) {
        // Only the top activity of the task in front is resumed; the others are stopped.
        const resumed = t === front && i === t.activities.length - 1;
        block += `${indent}  * Hist  #${i}: ${activityRecord(t, i)}
${indent}    packageName=${t.package} processName=${t.package}
${indent}    state=${resumed ? 'RESUMED' : 'STOPPED'} stopped=${!resumed} delayedResume=false finishing=false
${indent}    mVisibleRequested=${resumed} mVisible=${resumed}
`;
      }
      blocks.push(block);
    }
    const out = `ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)
Display #0 (activities from top to bottom):
${blocks.join('\n')}`;
    if (!listed(front)) return out;
    return `${out}
  Resumed activities in task display areas (from top to bottom):
    Resumed: ${ar}

  ResumedActivity: ${ar}
  topResumedActivity=${ar}
  mResumedActivity: ${ar}
  mFocusedApp=${ar}
`;
  };
  /**
   * RecentTasks.dump: the recents list, the most recently resumed task first (the home task
   * among them), each task by its short name and the part of Task.dump the phone keeps.
   */
  const recents = (): string => {
    const byId = new Map(tasks.stack.map((t) => [t.id, t]));
    let out = `ACTIVITY MANAGER RECENT TASKS (dumpsys activity recents)
mRecentsUid=${device.packages.get('com.android.launcher3')?.uid ?? 10040}
mRecentsComponent=ComponentInfo{com.android.launcher3/com.android.quickstep.RecentsActivity}
mFreezeTaskListReordering=false
mFreezeTaskListReorderingPendingTimeout=false
`;
    const recent = tasks.recents.map((id, i) => [i, byId.get(id)] as const);
    let header = false;
    for (const [i, t] of recent) {
      if (!t || !listed(t)) continue;
      if (!header) out += '  Recent tasks:\n';
      header = true;
      const a = affinity(ctx, t);
      const root = { pkg: t.package, cls: t.activities[0]!.activity };
      const uid = device.packages.get(t.package)?.uid ?? 10153;
      out += `  * Recent #${i}: ${taskName(ctx, t)}
    userId=0 effectiveUid=${formatUid(uid)}
${a !== null ? `    affinity=${a}\n` : ''}    mActivityComponent=${shortComponent(root)}
    Activities=[${t.activities.map((_, n) => activityRecord(t, n)).join(', ')}]
    askedCompatMode=false inRecents=true isAvailable=true
    taskId=${t.id} rootTaskId=${t.rootId}
`;
    }
    return header ? out : `${out}  (nothing)\n`;
  };
  const processes = (): string => {
    let out = 'ACTIVITY MANAGER RUNNING PROCESSES (dumpsys activity processes)\n  All known processes:\n';
    for (const p of device.processes.list().filter((x) => x.ppid === 512)) {
      const pkg = device.packages.get(p.name);
      const uid = pkg?.uid ?? 1000;
      // system_server's ProcessRecord is named "system".
      const name = p.name === 'system_server' ? 'system' : p.name;
      out += `  *APP* UID ${uid} ProcessRecord{${hashId('proc', p.name)} ${p.pid}:${name}/${formatUid(uid)}}\n    user #0 uid=${uid} gids={50${uid % 1000}, 20${uid % 1000}, 9997}\n    pid=${p.pid} starting=false\n`;
    }
    return out;
  };
  switch (section) {
    case 'services':
    case 's':
      return services();
    case 'activities':
    case 'a':
      return activities();
    case 'processes':
    case 'p':
      return processes();
    case 'top':
      // ActivityTaskManagerService.dumpActivity: `TASK <affinity> id=<task id>` over the
      // top activity of the visible task (the launcher's task has no affinity: `null`).
      return `TASK ${affinity(ctx, front)} id=${front.id} userId=0\n  ACTIVITY ${shortComponent(f)} ${activityRecord(front).split(' ')[0]!.slice('ActivityRecord{'.length)} pid=${device.processes.list().find((p) => p.name === f.pkg)?.pid ?? 1421}\n`;
    case 'recents':
    case 'r':
      return recents();
    case 'broadcasts':
    case 'b':
      return 'ACTIVITY MANAGER BROADCAST STATE (dumpsys activity broadcasts)\n  Historical broadcasts [foreground]:\n';
    case 'intents':
    case 'i':
      return 'ACTIVITY MANAGER PENDING INTENTS (dumpsys activity intents)\n  (nothing)\n';
    case 'lru':
      return processes();
    case 'package': {
      return `${activities()}\n${services()}`;
    }
    default:
      return `${activities()}\n${services()}\n${processes()}`;
  }
}

function dumpDeviceIdle(ctx: CommandContext, args: string[]): string {
  const list = ctx.device.system.idleWhitelist;
  if (args[0] === 'whitelist') {
    const changes = args.slice(1);
    if (changes.length === 0) {
      return (
        [...list]
          .map(
            (p) =>
              `${ctx.device.packages.get(p)?.system === false ? 'user' : 'system-excidle'},${p},${ctx.device.packages.get(p)?.uid ?? 1000}`,
          )
          .join('\n') + '\n'
      );
    }
    let out = '';
    for (const c of changes) {
      const name = c.slice(1);
      if (c.startsWith('+')) {
        if (!ctx.device.packages.get(name)) out += `Unknown package: ${name}\n`;
        else {
          list.add(name);
          out += `Added: ${name}\n`;
        }
      } else if (c.startsWith('-')) {
        list.delete(name);
        out += `Removed: ${name}\n`;
      } else out += `${list.has(c) ? 'true' : 'false'}\n`;
    }
    return out;
  }
  if (args[0] === 'tempwhitelist') return '';
  return `  Settings:\n    light_after_inactive_to=+3m0s0ms\n  mLightEnabled=true  mDeepEnabled=true\n  mForceIdle=false\n  mState=ACTIVE mLightState=ACTIVE\n  Whitelist (except idle) system apps:\n${[...list].map((p) => `    ${p}\n`).join('')}`;
}

/**
 * DisplayManagerService's dump. A logical display's base info is the panel's own (its
 * natural size and density, rotation 0, as LogicalDisplay takes it from the display
 * device); what the window manager makes of it (`wm size`, `wm density`, the rotation and
 * the size turned with it) is the override info, and the viewport input maps touches with.
 */
function dumpDisplay(ctx: CommandContext): string {
  const screen = powerOf(ctx).awake ? 'ON' : 'OFF';
  const { width, height, density: d } = ctx.device.display();
  const base = { w: width, h: height };
  const rotation = ctx.device.ui.rotation?.() ?? 0;
  const s = turned(base, rotation);
  const device = turned({ w: DEVICE.width, h: DEVICE.height }, rotation);
  const statusBar = ctx.device.ui.statusBarHeight;
  const modes = `mode 1, defaultMode 1, modes [{id=1, width=${DEVICE.width}, height=${DEVICE.height}, fps=${REFRESH_FPS}}]`;
  const tail = `layerStack 0, type INTERNAL, address {port=0}, deviceProductInfo DeviceProductInfo{name=, manufacturerPnpId=GGL, productId=1, modelYear=null, manufactureDate=null, connectionToSinkType=0}, state ${screen}, committedState ${screen}`;
  const info = (
    real: { w: number; h: number },
    largest: string,
    smallest: string,
    turn: number,
    density: number,
  ) =>
    `DisplayInfo{"Built-in Screen", displayId 0, displayGroupId 0, FLAG_SECURE, FLAG_SUPPORTS_PROTECTED_BUFFERS, FLAG_TRUSTED, real ${real.w} x ${real.h}, largest app ${largest}, smallest app ${smallest}, appVsyncOff 1000000, presDeadline ${VSYNC_PERIOD_NS}, ${modes}, rotation ${turn}, density ${density} (${DEVICE.density}.0 x ${DEVICE.density}.0) dpi, ${tail}}`;
  const natural = `${DEVICE.width} x ${DEVICE.height}`;
  // The app size ranges the window manager computes over the four rotations (dumpsys window's rng=).
  const [short, long] = [Math.min(base.w, base.h), Math.max(base.w, base.h)];
  return `DISPLAY MANAGER (dumpsys display)
  mOnlyCode=false
  mSafeMode=false
  mPendingTraversal=false
  mViewports=[DisplayViewport{type=INTERNAL, valid=true, isActive=true, displayId=0, uniqueId='local:4619827259835644672', physicalPort=0, orientation=${rotation}, logicalFrame=Rect(0, 0 - ${s.w}, ${s.h}), physicalFrame=Rect(0, 0 - ${device.w}, ${device.h}), deviceWidth=${device.w}, deviceHeight=${device.h}}]
  mDefaultDisplayDefaultColorMode=0

Display Devices: size=1
  DisplayDeviceInfo{"Built-in Screen": uniqueId="local:4619827259835644672", ${DEVICE.width} x ${DEVICE.height}, modeId 1, renderFrameRate ${REFRESH_FPS}, defaultModeId 1, supportedModes [{id=1, width=${DEVICE.width}, height=${DEVICE.height}, fps=${REFRESH_FPS}}], density ${DEVICE.density}, ${DEVICE.density}.0 x ${DEVICE.density}.0 dpi, appVsyncOff 1000000, presDeadline ${VSYNC_PERIOD_NS}, touch INTERNAL, rotation 0, type INTERNAL, address {port=0}, state ${screen}, committedState ${screen}, frameRateOverride , brightnessMinimum 0.0, brightnessMaximum 1.0, brightnessDefault 0.39763778, FLAG_ALLOWED_TO_BE_DEFAULT_DISPLAY, FLAG_ROTATES_WITH_CONTENT, FLAG_SECURE, FLAG_SUPPORTS_PROTECTED_BUFFERS}

Logical Displays: size=1
  Display 0:
    mDisplayId=0
    mBaseDisplayInfo=${info({ w: DEVICE.width, h: DEVICE.height }, natural, natural, 0, DEVICE.density)}
    mOverrideDisplayInfo=${info(s, `${long} x ${long - statusBar}`, `${short} x ${short - statusBar}`, rotation, d)}

Display Power State:
  mStopped=false
  mScreenState=${screen}
  mScreenBrightness=${screen === 'ON' ? '0.39763778' : '0.0'}
  mScreenReady=true
  mScreenUpdatePending=false
  mColorFadePrepared=false
  mColorFadeLevel=${screen === 'ON' ? '1.0' : '0.0'}
  mColorFadeReady=true
  mColorFadeDrawPending=false
`;
}

function dumpInputMethod(ctx: CommandContext): string {
  const sys = ctx.device.system;
  const f = focus(ctx);
  return `Current Input Method Manager state:
  Input Methods: mMethodMapUpdateCount=2
${[...sys.enabledImes].map((i) => `  InputMethod #0:\n    mId=${i} mSettingsActivity=null mIsVrOnly=false mSupportsSwitchingToNextInputMethod=true\n`).join('')}  mCurMethodId=${sys.currentIme}
  mCurFocusedWindowClient=${f.pkg}
  mCurrentUserId=0
  mInputShown=false
  mIsInputViewShown=false
  mSystemReady=true mInteractive=true
  mSettingsObserver=SettingsObserver{mUserId=0 mRegistered=true}
`;
}

function dumpNotification(ctx: CommandContext): string {
  const listeners = [...ctx.device.system.notificationListeners];
  return `Current Notification Manager state:
  Notification List:

  mNotificationListeners:
    Allowed listeners (${listeners.length}):
${listeners.map((l) => `      ComponentInfo{${l}}\n`).join('')}    Live listeners (${listeners.length}):
${listeners.map((l) => `      ${l} (user 0)\n`).join('')}`;
}

function dumpCpuInfo(ctx: CommandContext): string {
  const all = ctx.device.processes.list();
  const system = all
    .slice(0, 8)
    .map(
      (p, i) =>
        `  ${(1.5 - i * 0.15).toFixed(1)}% ${p.pid}/${p.name}: ${(1 - i * 0.1).toFixed(1)}% user + ${(0.5 - i * 0.05).toFixed(1)}% kernel`,
    );
  // The app processes too (what Appium's getPerformanceData('cpuinfo') looks for); the phone
  // keeps no CPU time for them, as ps and top show.
  const apps = all
    .slice(system.length)
    .filter((p) => p.name.includes('.'))
    .map((p) => `  0% ${p.pid}/${p.name}: 0% user + 0% kernel / faults: 0 minor`);
  const lines = [...system, ...apps].join('\n');
  return `Load: 0.42 / 0.31 / 0.18\nCPU usage from 60000ms to 0ms ago (${fullDate(ctx.device.now() - 60000)} to ${fullDate(ctx.device.now())}):\n${lines}\n4.1% TOTAL: 2.4% user + 1.5% kernel + 0.1% iowait + 0.1% irq + 0% softirq\n`;
}

function dumpMeminfo(ctx: CommandContext, args: string[]): string {
  const name = args.find((a) => !a.startsWith('-'));
  if (name) {
    const proc = ctx.device.processes.list().find((p) => p.name === name || String(p.pid) === name);
    if (!proc) return `No process found for: ${name}\n`;
    return `Applications Memory Usage (in Kilobytes):\nUptime: 1000000 Realtime: 1000000\n\n** MEMINFO in pid ${proc.pid} [${proc.name}] **
                   Pss  Private  Private  SwapPss      Rss     Heap     Heap     Heap
                 Total    Dirty    Clean    Dirty    Total     Size    Alloc     Free
                ------   ------   ------   ------   ------   ------   ------   ------
  Native Heap    12000    11900        0        0    13000    16000    12000     4000
  Dalvik Heap     4000     3900        0        0     6000     8000     4000     4000
        TOTAL    45000    30000     8000        0    ${proc.rss}    24000    16000     8000
`;
  }
  return `Applications Memory Usage (in Kilobytes):\nUptime: 1000000 Realtime: 1000000\n\nTotal RAM: 7,767,864K (status normal)\n Free RAM: 3,604,288K\n`;
}

const SF_DISPLAY =
  'Display 4619827259835644672 (HWC display 0): port=0 pnpId=GGL displayName="Built-in Screen"\n';

/**
 * SurfaceFlinger's dump: `--display-id`, `--latency` (the display's vsync period in ns;
 * a layer's frame times are not kept, and say so), `--latency-clear`, or the header.
 */
function dumpSurfaceFlinger(ctx: CommandContext, args: readonly string[]): number {
  const [option, layer] = args;
  if (option === '--display-id') {
    ctx.stdout.write(SF_DISPLAY);
    return 0;
  }
  if (option === '--latency') {
    ctx.stdout.write(`${VSYNC_PERIOD_NS}\n`);
    if (layer === undefined) return 0;
    ctx.stderr.write(`dumpsys: the virtual phone does not keep frame times of layer '${layer}'\n`);
    return 1;
  }
  // Clears the layers' frame times, of which there are none.
  if (option === '--latency-clear') return 0;
  if (option !== undefined && SF_UNMODELED.has(option)) {
    ctx.stderr.write(`dumpsys: the virtual phone does not model 'SurfaceFlinger ${option}'\n`);
    return 1;
  }
  ctx.stdout.write(
    `Build configuration: [sf PRESENT_TIME_OFFSET=0 FORCE_HWC_FOR_RBG_TO_YUV=1 MAX_VIRT_DISPLAY_DIM=0 RUNNING_WITHOUT_SYNC_FRAMEWORK=0 NUM_FRAMEBUFFER_SURFACE_BUFFERS=3]\n${SF_DISPLAY}`,
  );
  return 0;
}

/** SurfaceFlinger's dump options about layers, timings and buffers, which the phone does not keep. */
const SF_UNMODELED = new Set([
  '--list',
  '--timestats',
  '--frame-events',
  '--planner',
  '--frametimeline',
  '--vsync',
  '--dispsync',
  '--static-screen',
  '--edid',
  '--hwclayers',
  '--wide-color',
  '--frame-composition',
]);

export const dumpsys: CommandFn = (ctx) => {
  const [service, ...args] = ctx.args;
  const out = ctx.stdout;
  const device = ctx.device;
  switch (service) {
    case undefined:
      // A full dump of every service is not modeled: say so instead of pretending.
      ctx.stderr.write(
        'dumpsys: the virtual phone does not dump every service at once; name one (dumpsys -l lists them)\n',
      );
      return 1;
    case '-l':
      out.write(
        `Currently running services:\n${publishedServices(device.system)
          .map((k) => `  ${k}\n`)
          .join('')}`,
      );
      return 0;
    case 'window':
      out.write(dumpWindow(ctx, args));
      return 0;
    case 'power':
      out.write(dumpPower(ctx));
      return 0;
    case 'package': {
      const name = args.find((a) => !a.startsWith('-'));
      if (name === 'packages' || name === undefined) {
        for (const p of device.packages.all()) out.write(dumpPackage(ctx, p));
        return 0;
      }
      const p = device.packages.get(name);
      // An unknown package yields the (empty) tables only, as on a device.
      out.write(p ? dumpPackage(ctx, p) : 'Key Set Manager:\n\nPackages:\n\nQueries:\n\nDexopt state:\n');
      return 0;
    }
    case 'activity':
      // Sections ActivityManagerService dumps that the virtual phone does not keep say so,
      // instead of the whole dump standing in for them.
      if (args[0] !== undefined && UNMODELED_ACTIVITY_SECTIONS.has(args[0])) {
        ctx.stderr.write(`dumpsys: the virtual phone does not model 'activity ${args[0]}'\n`);
        return 1;
      }
      out.write(dumpActivity(ctx, args));
      return 0;
    case 'deviceidle':
      // Doze is not modeled (no app code runs to be held back): its state is ACTIVE, and a
      // command that would change it says so instead of printing the state as if it had.
      if (args.length > 0 && !['-a', 'whitelist', 'tempwhitelist'].includes(args[0]!)) {
        ctx.stderr.write(`dumpsys: the virtual phone does not model 'deviceidle ${args.join(' ')}'\n`);
        return 1;
      }
      out.write(dumpDeviceIdle(ctx, args));
      return 0;
    case 'display':
      out.write(dumpDisplay(ctx));
      return 0;
    case 'battery': {
      // Arguments run BatteryService's shell command (set, unplug, reset, get), as on a phone.
      if (args.length === 0 || args[0] === '-a') {
        out.write(device.battery.dump());
        return 0;
      }
      const r = device.battery.command(args);
      out.write(r.out);
      ctx.stderr.write(r.err);
      return 0;
    }
    case 'input_method':
      out.write(dumpInputMethod(ctx));
      return 0;
    case 'input':
      out.write(
        `INPUT MANAGER (dumpsys input)\n\nInput Manager Service (Java) State:\n  Interactive: true\nInput Dispatcher State:\n  DispatchEnabled: true\n  FocusedApplications:\n    displayId=0, name='${activityRecord(frontTask(ctx.device.ui.taskList()))}'\n  FocusedWindows:\n    displayId=0, name='${focus(ctx).pkg}/${focus(ctx).cls}'\n`,
      );
      return 0;
    case 'SurfaceFlinger':
      return dumpSurfaceFlinger(ctx, args);
    case 'cpuinfo':
      out.write(dumpCpuInfo(ctx));
      return 0;
    case 'meminfo':
      out.write(dumpMeminfo(ctx, args));
      return 0;
    case 'notification':
      out.write(dumpNotification(ctx));
      return 0;
    case 'trust':
      out.write(
        `Trust manager state:\n User "Owner" (id=0, flags=0x13) (current): trusted=false, trustManaged=false, deviceLocked=${powerOf(ctx).keyguard && ctx.device.system.lock.credential !== null}, isActiveUnlockRunning=false, strongAuthRequired=0\n`,
      );
      return 0;
    case 'location':
      out.write(
        `Location Manager State:\n  User 0:\n    Location Enabled: ${locationSwitch.on(device.settings)}\n`,
      );
      return 0;
    case 'wifi':
      out.write(`Wi-Fi is ${wifiSwitch.on(device.settings) ? 'enabled' : 'disabled'}\n`);
      return 0;
    case 'connectivity':
      out.write(
        `NetworkProviders for:\n\nActive default network: ${wifiSwitch.on(device.settings) ? '100' : 'none'}\n`,
      );
      return 0;
    default:
      if (isPublished(device.system, service)) {
        ctx.stderr.write(`dumpsys: the virtual phone does not model 'dumpsys ${service}'\n`);
        return 1;
      }
      ctx.stderr.write(`Can't find service: ${service}\n`);
      return 0;
  }
};
