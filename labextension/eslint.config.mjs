// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const NO_HTML = 'Set text with textContent or createTextNode: task keys and names are user data.';

export default tseslint.config(
  { ignores: ['node_modules/', 'lib/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // every string reaches the page as text, never parsed as HTML
      'no-restricted-properties': [
        'error',
        { property: 'innerHTML', message: NO_HTML },
        { property: 'outerHTML', message: NO_HTML },
        { property: 'insertAdjacentHTML', message: NO_HTML },
        { property: 'createContextualFragment', message: NO_HTML },
        { object: 'document', property: 'write', message: NO_HTML },
        { object: 'document', property: 'writeln', message: NO_HTML }
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: 'MemberExpression[computed=true][property.value=/^(inner|outer)HTML$/]',
          message: NO_HTML
        }
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      eqeqeq: 'error',
      curly: 'error'
    }
  },
  {
    files: ['scripts/**/*.mjs', 'eslint.config.mjs'],
    languageOptions: { globals: { URL: 'readonly', process: 'readonly' } }
  }
);
