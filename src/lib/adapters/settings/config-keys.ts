/**
 * The keys a user may keep in the config file (`targon config set KEY VALUE`), in the order `targon config list` shows
 * them: the settings table marks each as stored. A list without dependencies, so that the JSON contract of the config
 * commands can name the keys without importing the settings table.
 */
export const CONFIG_KEYS = [
  'api-key',
  'org',
  'owner',
  'fleet',
  'max-price',
  'image',
  'dstack-version',
  'notify-url',
  'heartbeat-url',
  'dstack-url',
  'dstack-project',
  'dstack-token',
  'dstack-host-pattern',
  'warn-window',
  'min-runway',
  'idle-limit',
  'job-store-limit',
  'api-url',
] as const
