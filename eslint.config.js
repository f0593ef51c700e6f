import js from '@eslint/js'
import tseslint from 'typescript-eslint'

const UNDICI = {message: 'import undici-subset.ts: the bundle ships only that part of undici', name: 'undici'}
const NOT_COMMANDS = {
  group: ['**/commands/*', '**/commands/**'],
  message: 'src/lib must not import src/commands: move the shared piece into src/lib',
}
const NOT_CLI = {
  group: ['**/cli/*', '**/cli/**'],
  message: 'only commands and src/lib/cli use the CLI adapters: pass what a workflow needs as a value or a listener',
}
const NOT_WORKFLOWS = {
  group: ['**/workflows/*', '**/workflows/**'],
  message:
    'the domain, adapters and core stand below the workflows: move the shared piece down into src/lib/domain, or pass it in as a value or a callback',
}
const NOT_DOMAIN = {
  group: ['**/domain/*', '**/domain/**'],
  message: 'adapters stand below the domain: move what the adapter needs into the adapter (or src/lib/core), or take it as a parameter',
}
const NOT_ADAPTERS = {
  group: ['**/lib/adapters/*', '**/lib/adapters/**'],
  message: 'a command imports no adapter: use what lib/cli or a workflow folder (its index.ts) offers, re-exported there if need be',
}
const ONLY_WORKFLOW_ENTRIES = {
  group: ['**/lib/workflows/*/*', '!**/lib/workflows/*/index.js'],
  message: "a command imports a workflow folder through its public entry: '…/workflows/<folder>/index.js'",
}
const ONLY_CORE = {
  // Anything outside the folder but the package's own version.
  regex: String.raw`^\.\./(?!\.\./\.\./package\.json$)`,
  message: 'src/lib/core is the foundation: it imports nothing else of the project; move the piece into core or out of it',
}

// Time is read only through the clock a run is given (src/lib/core/clock.ts), so that every wait and deadline can run
// on a fake clock in tests. `new Date(ms)` converts a given time and stays allowed.
const CLOCK_READS = [
  {
    message: 'read the time through the injected Clock (clock.now()), not Date.now',
    selector: "MemberExpression[object.name='Date'][property.name='now']",
  },
  {
    message: 'read the time through the injected Clock: new Date(clock.now()), or isoNow(clock)',
    selector: "NewExpression[callee.name='Date'][arguments.length=0]",
  },
]

export default tseslint.config(
  {ignores: ['dist/**', 'node_modules/**', 'coverage/**']},
  js.configs.recommended,
  {
    files: ['bin/*.js', 'scripts/*.mjs', 'bench/*.mjs', 'test/vm/doubles/*.mjs'],
    languageOptions: {globals: {URL: 'readonly', console: 'readonly', process: 'readonly'}},
  },
  {
    files: ['scripts/*.cjs', 'test/helpers/*.cjs'],
    languageOptions: {globals: {URL: 'readonly', module: 'writable', process: 'readonly', require: 'readonly'}, sourceType: 'commonjs'},
  },
  {
    extends: [...tseslint.configs.recommendedTypeChecked],
    files: ['**/*.ts'],
    languageOptions: {parserOptions: {project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname}},
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unused-vars': ['error', {argsIgnorePattern: '^_'}],
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unsafe-assignment': 'error',
      '@typescript-eslint/no-unsafe-member-access': 'error',
      'no-console': 'error',
    },
  },
  {
    // A run's settings are one value, resolved by the settings resolver from the environment it is given (see
    // src/lib/adapters/settings/resolve.ts): nothing else reads process.env, but for what is not a setting.
    files: ['src/**/*.ts'],
    ignores: [
      // The settings resolver itself: the one reader of the settings' variables.
      'src/lib/adapters/settings/resolve.ts',
      // CI and TERM: whether stderr can show live progress.
      'src/lib/core/output.ts',
      // XDG_CONFIG_HOME and HOME: where systemd looks for user units.
      'src/lib/workflows/guard/installed.ts',
      // The sanitised environment handed on to the ssh child.
      'src/lib/adapters/ssh/connect-info.ts',
    ],
    rules: {
      'no-restricted-properties': [
        'error',
        {message: 'read settings through the run context (SettingsResolver), not process.env', object: 'process', property: 'env'},
      ],
    },
  },
  {
    // Test files share their worker with the files after them (vitest.config.ts): a new process.env object would stay,
    // unlinked from the real environment (os.homedir() and child processes would no longer see what is set on it).
    files: ['test/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          message: 'change process.env in place (set or delete its keys), never replace it',
          selector: "AssignmentExpression[left.object.name='process'][left.property.name='env']",
        },
      ],
    },
  },
  {
    // Time is read through the injected Clock (src/lib/core/clock.ts), so that tests can run it fake.
    files: ['src/**/*.ts'],
    ignores: ['src/lib/core/clock.ts'],
    rules: {'no-restricted-syntax': ['error', ...CLOCK_READS]},
  },
  {
    // The bundle ships only part of undici: import undici-subset.ts. A command is a shell over lib/cli and the public
    // entry of a workflow folder (its index.ts): it never reaches past them into an adapter or a workflow's parts.
    files: ['src/cli.ts', 'src/commands/**/*.ts'],
    rules: {'no-restricted-imports': ['error', {paths: [UNDICI], patterns: [NOT_ADAPTERS, ONLY_WORKFLOW_ENTRIES]}]},
  },
  // Dependencies point one way, each layer of src/lib importing only those below it (type-only imports count too):
  // commands -> lib/cli (the oclif base, display, prompts, the JSON contract) -> lib/workflows (one folder per command
  // family) -> lib/domain (the fleet view, deletion, ledger, capacity, idle, hooks, offers) -> lib/adapters (Targon
  // API, SSH, bootstrap, local state, settings, events, notify) -> lib/core, which depends on nothing of the project.
  // scripts/cycles.mjs --folders refuses cycles between the folders of one layer.
  {
    files: ['src/lib/**/*.ts'],
    ignores: ['**/undici-subset.ts'],
    rules: {'no-restricted-imports': ['error', {paths: [UNDICI], patterns: [NOT_COMMANDS, NOT_CLI]}]},
  },
  {
    files: ['src/lib/cli/**/*.ts'],
    rules: {'no-restricted-imports': ['error', {paths: [UNDICI], patterns: [NOT_COMMANDS]}]},
  },
  {
    files: ['src/lib/domain/**/*.ts'],
    rules: {'no-restricted-imports': ['error', {paths: [UNDICI], patterns: [NOT_COMMANDS, NOT_CLI, NOT_WORKFLOWS]}]},
  },
  {
    files: ['src/lib/adapters/**/*.ts'],
    ignores: ['**/undici-subset.ts'],
    rules: {'no-restricted-imports': ['error', {paths: [UNDICI], patterns: [NOT_COMMANDS, NOT_CLI, NOT_WORKFLOWS, NOT_DOMAIN]}]},
  },
  {
    files: ['src/lib/core/**/*.ts'],
    rules: {'no-restricted-imports': ['error', {paths: [UNDICI], patterns: [NOT_COMMANDS, NOT_CLI, ONLY_CORE]}]},
  },
)
