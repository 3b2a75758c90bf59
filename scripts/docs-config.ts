import { writeFileSync } from 'node:fs'
import { configurationPage } from '../lib/runtime/env-docs'

// docs/configuration.md, from the environment schemas
writeFileSync(new URL('../docs/configuration.md', import.meta.url), configurationPage())
