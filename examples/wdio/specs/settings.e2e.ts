/**
 * The Settings app: scroll to About phone and read what the phone says it is.
 */
describe('settings app', () => {
  it('shows the Android version under About phone', async () => {
    await driver.activateApp('com.android.settings');
    const about = $('android=new UiSelector().text("About phone")');
    if (!(await about.isDisplayed()))
      await driver.execute('mobile: scroll', {
        strategy: '-android uiautomator',
        selector: 'new UiSelector().text("About phone")',
      });
    await about.click();
    await expect($('android=new UiSelector().textContains("Android version")')).toBeDisplayed();
    await expect($('android=new UiSelector().text("14")')).toBeDisplayed();
  });

  it('knows the screen size', async () => {
    const { width, height } = await driver.getWindowSize();
    expect(width).toBe(720);
    expect(height).toBe(1280);
  });
});
