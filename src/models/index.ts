import type { Connection } from 'mongoose';
import { userModel } from './user.js';
import { postModel } from './post.js';
import { productModel } from './product.js';
import { watchModel } from './watch.js';
import { eanImportModel } from './ean-import.js';
import { quotaUsageModel } from './quota-usage.js';
import { historyPointModel } from './history-point.js';
import { alertModel } from './alert.js';
import { deliveryModel } from './delivery.js';
import { endpointModel } from './endpoint.js';
import { accountEventModel } from './account-event.js';
import { accountCounterModel } from './account-counter.js';
import { emailAddressModel } from './email-address.js';
import { heldDeliveryModel } from './held-delivery.js';

/**
 * Registers every model on a connection, so that index builds (`syncIndexes`) see them all.
 * Each issue's collections add their factory here.
 */
export function registerModels(conn: Connection): void {
  userModel(conn);
  postModel(conn);
  productModel(conn);
  watchModel(conn);
  eanImportModel(conn);
  quotaUsageModel(conn);
  historyPointModel(conn);
  alertModel(conn);
  deliveryModel(conn);
  endpointModel(conn);
  accountEventModel(conn);
  accountCounterModel(conn);
  emailAddressModel(conn);
  heldDeliveryModel(conn);
}
