// @cairn/client: the JavaScript client of cairn. See README.md and docs/clients/js.md.
export { CairnClient, newIdempotencyKey } from './lib/client.js';
export { CairnError, FeedRangeGoneError } from './lib/errors.js';
export { FeedSubscription } from './lib/feed.js';
export { NODE_ID_MAX, parseAfter } from './lib/after.js';
export { Cells, Counter, Entities, Graph, Indexes, idText, sets } from './lib/models.js';
export { parseJson, stringifyJson } from './lib/json.js';
