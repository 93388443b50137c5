/**
 * An app's process dying of an uncaught exception, as Android's runtime reports it: the
 * default handler (RuntimeInit's KillApplicationHandler) logs `FATAL EXCEPTION: <thread>`,
 * `Process: <name>, PID: <pid>` and the stack trace under the tag AndroidRuntime at error
 * priority, from the app's own pid and the crashing thread, before the process is killed.
 */

/** An uncaught Java exception: its class, message and stack frames (innermost first). */
export interface AppException {
  /** Fully qualified class, e.g. `java.lang.IllegalStateException`. */
  className: string;
  message: string;
  /** `class.method(File.java:line)` frames, without the leading `at`. */
  frames: readonly string[];
  /** The thread that threw it (`main` for the UI thread). */
  thread?: string;
}

/** The lines AndroidRuntime logs for the crash, in order (each its own log line). */
export function fatalExceptionLines(processName: string, pid: number, e: AppException): string[] {
  return [
    `FATAL EXCEPTION: ${e.thread ?? 'main'}`,
    `Process: ${processName}, PID: ${pid}`,
    `${e.className}: ${e.message}`,
    ...e.frames.map((frame) => `\tat ${frame}`),
  ];
}

/**
 * The frames below an app's click handler on Android 14's UI thread: the click is performed
 * from the main looper, which ActivityThread.main runs, which Zygote started.
 */
export const CLICK_FRAMES: readonly string[] = [
  'android.view.View.performClick(View.java:7659)',
  'android.view.View.performClickInternal(View.java:7636)',
  'android.view.View.-$$Nest$mperformClickInternal(Unknown Source:0)',
  'android.view.View$PerformClick.run(View.java:30156)',
  'android.os.Handler.handleCallback(Handler.java:958)',
  'android.os.Handler.dispatchMessage(Handler.java:99)',
  'android.os.Looper.loopOnce(Looper.java:205)',
  'android.os.Looper.loop(Looper.java:294)',
  'android.app.ActivityThread.main(ActivityThread.java:8177)',
  'java.lang.reflect.Method.invoke(Native Method)',
  'com.android.internal.os.RuntimeInit$MethodAndArgsCaller.run(RuntimeInit.java:552)',
  'com.android.internal.os.ZygoteInit.main(ZygoteInit.java:971)',
];
