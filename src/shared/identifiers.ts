/**
 * The names devices and tenants are known by. Every capability checks them, the request
 * schemas and the CLI alike, so they live below all of them.
 */

/** OKM serial numbers and asset ids: 1–64 characters of A-Z a-z 0-9 . _ - */
export const SERIAL_NUMBER_PATTERN = '^[A-Za-z0-9._-]{1,64}$';
const SERIAL_NUMBER = new RegExp(SERIAL_NUMBER_PATTERN);

export const isSerialNumber = (value: string) => SERIAL_NUMBER.test(value);

/** Customer names: 1–64 characters of A-Z a-z 0-9 . _ - */
export const CUSTOMER_NAME_PATTERN = '^[A-Za-z0-9._-]{1,64}$';
