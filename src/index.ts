export * from './api/schemas.js';
