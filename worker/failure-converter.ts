import { DefaultFailureConverter } from '@temporalio/common';

/**
 * The failure converter of a worker that encrypts payloads: a failure's message and stack trace go
 * into an encoded payload (which the codec encrypts) instead of plain text in history. Loaded by path
 * (DataConverter.failureConverterPath), so the workflow bundle uses it too; clients need nothing, as
 * every SDK decoder reads the encoded attributes back.
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
