/**
 * The floor's statements (bench/poll-floor.ts), also measured on their own
 * (bench/poll-statement-execution.ts): the least a steady poll reads and writes.
 */

/** The settings a poll decides from (desired values and list digests), written out here: the least a poll reads. */
export const FLOOR_SETTINGS = `cache_mode, key_checkout_window_time, key_checkout_window_contact, auditing_enabled, asset_list_digest,
  users_assets_digest, polling_interval, kas_firmware, batch_key_firmware, wireless_key_firmware, status_urls`;

/** The floor's PostgreSQL batch: the polls as arrays (serial numbers, times, IPs, reported values), one statement. */
export const FLOOR_POSTGRES_STATEMENT = `WITH input AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) AS i(serial_number, now, ip, reported)),
  polled AS (
    INSERT INTO okm_polls AS p (serial_number, last_sync_time, polls, last_ip, reported)
    SELECT i.serial_number, i.now, 1, i.ip, i.reported FROM input i JOIN okms o ON o.serial_number = i.serial_number
    ON CONFLICT (serial_number) DO UPDATE SET polls = p.polls + 1, last_sync_time = excluded.last_sync_time,
      last_ip = excluded.last_ip, reported = excluded.reported
    RETURNING p.serial_number, p.polls)
  SELECT o.serial_number, ${FLOOR_SETTINGS.replace(/(\w+)/g, 'o.$1')}, polled.polls FROM polled JOIN okms o ON o.serial_number = polled.serial_number`;
