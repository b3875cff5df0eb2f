import { z } from 'zod';

/** Every error answer: Laravel's `{"message": …}`. */
export const errorBodySchema = z.object({ message: z.string() }).meta({ id: 'Error', example: { message: 'Not Found.' } });

/** A 422 adds one list of messages per field that failed. */
export const validationErrorBodySchema = z.object({ message: z.string(), errors: z.record(z.string(), z.array(z.string())) }).meta({
  id: 'ValidationError',
  example: {
    message: 'The limit field must not be greater than 100.',
    errors: { limit: ['The limit field must not be greater than 100.'] },
  },
});

export interface ErrorBody {
  message: string;
  errors?: Readonly<Record<string, readonly string[]>>;
}
