/**
 * The run's global teardown: phonelease's sweep ends any phone a worker could not end
 * (killed mid-test). In a project that installs phonelease from npm, the config can name
 * 'phonelease/playwright/teardown' directly; this file is where a teardown of your own goes.
 */
export { default } from 'phonelease/playwright/teardown';
