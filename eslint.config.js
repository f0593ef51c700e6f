import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {ignores: ['dist/**', 'node_modules/**', 'coverage/**']},
  js.configs.recommended,
  {
    files: ['bin/*.js', 'scripts/*.mjs', 'bench/*.mjs', 'test/vm/doubles/*.mjs'],
    languageOptions: {globals: {URL: 'readonly', console: 'readonly', process: 'readonly'}},
  },
  {
    files: ['scripts/*.cjs'],
    languageOptions: {globals: {URL: 'readonly', module: 'writable', require: 'readonly'}, sourceType: 'commonjs'},
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
    files: ['src/**/*.ts'],
    ignores: ['**/undici-subset.ts'],
    rules: {
      'no-restricted-imports': ['error', {paths: [{message: 'import undici-subset.ts: the bundle ships only that part of undici', name: 'undici'}]}],
    },
  },
)
