import type { AlertFields } from '../../models/alert.js';
import type { Endpoint } from '../endpoints/endpoint.js';

/** An alert as the service reads it: everything but its sealed secret of before endpoints. */
export type Alert = Omit<AlertFields, 'secret_sealed'>;

/** An alert with the endpoint it delivers to (null: an alert of before endpoints, not yet moved). */
export interface AlertView {
  readonly alert: Alert;
  readonly endpoint: Endpoint | null;
}
