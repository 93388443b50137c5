/**
 * The virtual phone's UiAutomator2 server (device port 6790). See ./server.ts.
 */
export { createUiAutomator2Server, ELEMENT_KEY } from './server.js';
