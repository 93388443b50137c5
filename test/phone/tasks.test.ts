/**
 * Tasks through adb, as Android 14 lists them: every task of the display in `dumpsys
 * activity activities` (top to bottom, the launcher's task inside the home root task),
 * RecentTasks' order in `dumpsys activity recents`, root tasks in `am stack list`, and one id
 * per task everywhere, given when the task is created and increasing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVirtualAdb } from '../support/virtual-adb.js';
import type { VirtualAdb } from '../support/virtual-adb.js';

const SETTINGS = 'com.android.settings';
const LOGIN = 'com.phonelease.login';
const LAUNCHER = 'com.android.launcher3';

let v: VirtualAdb;

beforeAll(async () => {
  v = await startVirtualAdb();
});

afterAll(async () => {
  await v?.close();
});

const sh = (command: string) => v.adbOk(['shell', command]);

interface Listed {
  id: number;
  type: string;
  /** What follows A= (uid:package) or I= (a component). */
  name: string;
  visible: boolean;
}

/** The `* Task{...}` lines of `dumpsys activity activities`, top to bottom. */
async function activityTasks(): Promise<Listed[]> {
  const out = await sh('dumpsys activity activities');
  return [...out.matchAll(/^\s*\* Task\{\S+ #(\d+) type=(\w+)(?: [AI]=(\S+))? U=0.*? visible=(\w+) /gm)].map(
    (m) => ({
      id: Number(m[1]),
      type: m[2]!,
      name: m[3] ?? '',
      visible: m[4] === 'true',
    }),
  );
}

/** The `* Recent #N: Task{...}` lines of `dumpsys activity recents`, most recent first. */
async function recentTasks(args = ''): Promise<{ n: number; id: number; name: string }[]> {
  const out = await sh(`dumpsys activity recents ${args}`);
  return [...out.matchAll(/^ {2}\* Recent #(\d+): Task\{\S+ #(\d+) type=\w+ [AI]=(\S+)\}$/gm)].map((m) => ({
    n: Number(m[1]),
    id: Number(m[2]),
    name: m[3]!,
  }));
}

/** `am stack list`: each root task with its leaf tasks' ids, packages and visibility. */
async function rootTasks(): Promise<
  { root: number; tasks: { id: number; pkg: string; visible: boolean }[] }[]
> {
  const out = await sh('am stack list');
  return out
    .split(/^(?=RootTask id=)/m)
    .filter((b) => b.startsWith('RootTask'))
    .map((b) => ({
      root: Number(/^RootTask id=(\d+) /.exec(b)![1]),
      tasks: [
        ...b.matchAll(/^ {2}taskId=(\d+): ([^/\s]+)\/\S+ bounds=\S+ userId=0 visible=(\w+) topActivity=/gm),
      ].map((m) => ({ id: Number(m[1]), pkg: m[2]!, visible: m[3] === 'true' })),
    }));
}

const idOf = (tasks: Listed[], pkg: string) => tasks.find((t) => t.name.endsWith(`:${pkg}`))?.id ?? -1;

describe('tasks', () => {
  let settings = -1;
  let login = -1;

  it('boots with the home root task and the launcher task inside it', async () => {
    const tasks = await activityTasks();
    expect(tasks).toEqual([
      { id: 1, type: 'home', name: '', visible: true },
      // Launcher3's activity has an empty taskAffinity: its task is named by its intent (I=).
      { id: 2, type: 'home', name: `${LAUNCHER}/.Launcher`, visible: true },
    ]);
    expect(await sh('dumpsys activity activities')).toMatch(/rootTaskId=1 visible=true/);
    expect(await rootTasks()).toEqual([{ root: 1, tasks: [{ id: 2, pkg: LAUNCHER, visible: true }] }]);
    expect(await recentTasks()).toEqual([{ n: 0, id: 2, name: `${LAUNCHER}/.Launcher` }]);
  });

  it('lists every task, top to bottom, each with the id it got when it was created', async () => {
    await v.adbOk(['shell', 'am', 'start', '-W', '-n', `${SETTINGS}/.Settings`]);
    await v.adbOk(['shell', 'am', 'start', '-W', '-n', `${LOGIN}/.LoginActivity`]);
    const tasks = await activityTasks();
    settings = idOf(tasks, SETTINGS);
    login = idOf(tasks, LOGIN);
    // New tasks get new, higher ids: Settings after the launcher's, the Login app after Settings.
    expect(settings).toBeGreaterThan(2);
    expect(login).toBeGreaterThan(settings);
    expect(tasks.map((t) => [t.id, t.type, t.visible])).toEqual([
      [login, 'standard', true],
      [settings, 'standard', false],
      [1, 'home', false],
      [2, 'home', false],
    ]);
    // A standard task's affinity is its app's uid and package (ActivityRecord.computeTaskAffinity).
    expect(tasks[1]!.name).toMatch(new RegExp(`^\\d+:${SETTINGS.replace(/\./g, '\\.')}$`));

    const activities = await sh('dumpsys activity activities');
    // The lines scripts read name the front activity, in its own task.
    expect(activities).toMatch(
      new RegExp(
        `^ {2}mResumedActivity: ActivityRecord\\{\\S+ u0 ${LOGIN}/\\.LoginActivity t${login}\\}$`,
        'm',
      ),
    );
    expect(activities).toMatch(
      new RegExp(
        `^ {4}topResumedActivity=ActivityRecord\\{\\S+ u0 ${LOGIN}/\\.LoginActivity t${login}\\}$`,
        'm',
      ),
    );
    expect(activities).toMatch(
      new RegExp(
        `^ {4}\\* Hist {2}#0: ActivityRecord\\{\\S+ u0 ${SETTINGS}/\\.Settings t${settings}\\}$`,
        'm',
      ),
    );
    expect(activities).toMatch(/^ {6}state=STOPPED stopped=true/m);

    // am stack list: the same ids, root tasks top to bottom.
    expect(await rootTasks()).toEqual([
      { root: login, tasks: [{ id: login, pkg: LOGIN, visible: true }] },
      { root: settings, tasks: [{ id: settings, pkg: SETTINGS, visible: false }] },
      { root: 1, tasks: [{ id: 2, pkg: LAUNCHER, visible: false }] },
    ]);
    // Recents, most recently resumed first, the home task among them.
    expect((await recentTasks()).map((r) => r.id)).toEqual([login, settings, 2]);
    // And the window manager's focused app is in that same task.
    const window = await sh('dumpsys window');
    expect(window).toMatch(
      new RegExp(`mFocusedApp=ActivityRecord\\{\\S+ u0 ${LOGIN}/\\.LoginActivity t${login}\\}`),
    );
    expect(window).toMatch(new RegExp(`mDisplayId=0 rootTaskId=${login} `));
    expect(window).toMatch(/rootTasks=3\n/);
    expect(await sh('dumpsys activity top')).toMatch(
      new RegExp(`^TASK \\d+:${LOGIN.replace(/\./g, '\\.')} id=${login} userId=0$`, 'm'),
    );
  });

  it('HOME puts the home task on top; the apps keep their tasks behind it', async () => {
    await v.adbOk(['shell', 'input', 'keyevent', 'KEYCODE_HOME']);
    const tasks = await activityTasks();
    expect(tasks.map((t) => [t.id, t.visible])).toEqual([
      [1, true],
      [2, true],
      [login, false],
      [settings, false],
    ]);
    expect((await recentTasks()).map((r) => r.id)).toEqual([2, login, settings]);
    expect(await sh('dumpsys activity activities')).toMatch(
      new RegExp(`^ {2}mResumedActivity: ActivityRecord\\{\\S+ u0 ${LAUNCHER}/\\.Launcher t2\\}$`, 'm'),
    );
    // Starting Settings again brings its task back, with its id.
    await v.adbOk(['shell', 'am', 'start', '-W', '-n', `${SETTINGS}/.Settings`]);
    expect((await activityTasks())[0]).toMatchObject({ id: settings, visible: true });
  });

  it('BACK at the root moves the task to the back, and the task behind shows', async () => {
    await v.adbOk(['shell', 'am', 'start', '-W', '-n', `${LOGIN}/.LoginActivity`]);
    expect((await activityTasks()).map((t) => t.id)).toEqual([login, settings, 1, 2]);
    await v.adbOk(['shell', 'input', 'keyevent', 'KEYCODE_BACK']);
    // moveTaskToBack: to the bottom of the display, below home; Settings (behind it) shows.
    expect((await activityTasks()).map((t) => [t.id, t.visible])).toEqual([
      [settings, true],
      [1, false],
      [2, false],
      [login, false],
    ]);
    expect((await recentTasks()).map((r) => r.id)).toEqual([settings, login, 2]);
  });

  it('a task that ends takes its id with it; the next task gets a higher one', async () => {
    await v.adbOk(['shell', 'am', 'force-stop', LOGIN]);
    expect((await activityTasks()).map((t) => t.id)).toEqual([settings, 1, 2]);
    expect((await recentTasks()).map((r) => r.id)).not.toContain(login);
    await v.adbOk(['shell', 'am', 'start', '-W', '-n', `${LOGIN}/.LoginActivity`]);
    const again = idOf(await activityTasks(), LOGIN);
    expect(again).toBeGreaterThan(login);
    expect((await rootTasks()).map((r) => r.root)).toEqual([again, settings, 1]);
  });

  it('dumpsys activity recents PACKAGE lists that package only, numbered in the full list', async () => {
    const all = await recentTasks();
    const only = await recentTasks(SETTINGS);
    expect(only).toEqual(all.filter((r) => r.name.endsWith(`:${SETTINGS}`)));
    expect(only).toHaveLength(1);
  });

  it('am task has no list, and am stack says what it does not model', async () => {
    expect(await v.adb(['shell', 'am task list'])).toMatchObject({
      code: 255,
      stdout: '',
      stderr: "Error: unknown command 'list'\n",
    });
    expect(await v.adb(['shell', 'am stack remove 3'])).toMatchObject({
      code: 255,
      stderr: 'am: stack remove: not modeled by the virtual phone\n',
    });
    expect(await v.adb(['shell', 'am stack'])).toMatchObject({
      code: 255,
      stderr: expect.stringContaining('IllegalArgumentException: Argument expected after "stack"'),
    });
  });
});
