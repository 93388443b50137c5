/**
 * `await using phone = await leasePhone()` needs Symbol.asyncDispose at run time. Node 20
 * defines it (as Symbol.for('nodejs.asyncDispose')); older runtimes may not, and then
 * TypeScript's downlevelled `await using` would throw. Define it only where it is missing,
 * with the same registered symbol Node uses, so both agree.
 */
const symbols = Symbol as unknown as { asyncDispose?: symbol };
symbols.asyncDispose ??= Symbol.for('nodejs.asyncDispose');
