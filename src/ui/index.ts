/** UI automation for a leased phone: locators, actions and the engine behind them. */
export {
  Locator,
  rootLocator,
  type BoundingBox,
  type FilterOptions,
  type SwipeDirection,
  type TimeoutOption,
  type WaitForState,
} from './locator.js';
export { UiEngine } from './engine.js';
export type { KeyName } from './driver.js';
export type { AndroidSelector, Selector, TextMatch } from './selector.js';
export { StrictModeViolationError, UiTimeoutError } from './diagnostics.js';
export { launchApp, pressKey } from './phone.js';
export { fieldValue, isTextField, isVisible, textOf, type UiNode, type UiSnapshot } from './tree.js';
export { shownOnScreen } from './viewport.js';
