/**
 * Builds UiNodeInfo trees for UiAutomator2 tests: every attribute defaulted as a plain
 * Android view reports it, overridden per node.
 */
import type { UiNodeInfo } from '../../server/devices/virtual/ui/types.js';

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
    resourceId: '',
    text: '',
    contentDesc: '',
    hint: '',
    bounds: { left: 0, top: 0, right: 100, bottom: 100 },
    checkable: false,
    checked: false,
    clickable: false,
    enabled: true,
    focusable: false,
    focused: false,
    scrollable: false,
    longClickable: false,
    password: false,
    selected: false,
    children,
    ...props,
  };
}
