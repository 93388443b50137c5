/**
 * Builds UiNodeInfo trees for UiAutomator2 tests: every attribute defaulted as a plain
 * Android view reports it, overridden per node.
 */
import { PLAIN_VIEW, type UiNodeInfo } from '../../server/devices/virtual/ui/types.js';

let nextKey = 0;

export function view(
  className: string,
  props: Partial<UiNodeInfo> = {},
  children: UiNodeInfo[] = [],
): UiNodeInfo {
  return {
    key: `k${nextKey++}`,
    className,
    packageName: 'com.example',
    ...PLAIN_VIEW,
    bounds: { left: 0, top: 0, right: 100, bottom: 100 },
    children,
    ...props,
  };
}
