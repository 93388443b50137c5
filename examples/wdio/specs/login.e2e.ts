/**
 * The virtual phone's Login app, driven through Appium the way you would drive any app:
 * by resource id, accessibility id and XPath.
 */
describe('login app', () => {
  beforeEach(async () => {
    await driver.activateApp('com.phonelease.login');
  });

  it('welcomes demo with the right password', async () => {
    await $('id=com.phonelease.login:id/username').setValue('demo');
    await $('~password').setValue('secret');
    await $('//*[@text="Log in"]').click();
    await expect($('id=com.phonelease.login:id/result')).toHaveText('Welcome, demo!');
  });

  it('refuses a wrong password', async () => {
    await $('~username').setValue('demo');
    await $('id=com.phonelease.login:id/password').setValue('nope');
    await $('android=new UiSelector().text("Log in")').click();
    await expect($('//*[@resource-id="com.phonelease.login:id/result"]')).toHaveText(
      'Wrong username or password',
    );
  });
});
