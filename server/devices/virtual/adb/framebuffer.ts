/**
 * adbd's `framebuffer:` service, what ddmlib's getScreenshot() (Android Studio, Spoon) and
 * adbkit's framebuffer() read: the screen as `screencap` gives it raw, behind the DDMS
 * raw-image header of version 2 (AOSP adb/daemon/framebuffer_service.cpp), then the stream
 * closes.
 */
import type { Device } from '../device.js';
import type { AdbStream } from './stream.js';

/** DDMS_RAWIMAGE_VERSION: the header with a colour space after the bits per pixel. */
const RAW_IMAGE_VERSION = 2;

/** The header, for RGBA_8888 (screencap's format 1), as the struct's fields in order. */
function rawImageHeader(width: number, height: number, colorSpace: number): Buffer {
  const fields = [
    RAW_IMAGE_VERSION,
    32, // bits per pixel
    colorSpace,
    width * height * 4, // size
    width,
    height,
    0, // red offset, length
    8,
    16, // blue offset, length (the struct's order: red, blue, green, alpha)
    8,
    8, // green offset, length
    8,
    24, // alpha offset, length
    8,
  ];
  const header = Buffer.alloc(fields.length * 4);
  fields.forEach((value, i) => header.writeUInt32LE(value, i * 4));
  return header;
}

export function runFramebufferService(stream: AdbStream, device: Device): void {
  void (async () => {
    // Chrome's page as it is now, as screencap draws it.
    await device.browser?.refreshFrame();
    const ui = device.ui;
    const pixels = ui.renderRgba();
    // screencap reports the colour space as unknown (0), and adbd passes it on.
    const header = rawImageHeader(ui.width, ui.height, 0);
    stream.end(Buffer.concat([header, pixels]));
  })().catch((error: unknown) => {
    device.log.debug('virtual adb: framebuffer failed', { error: String(error) });
    stream.destroy();
  });
}
