// Medusa v2 configuration for the test suite's shop engine: PostgreSQL from DATABASE_URL
// (TCP on 127.0.0.1: a unix-socket URL timed out here), no admin dashboard build, no Redis
// (Medusa falls back to in-memory event bus and cache). Telemetry is switched off by the
// environment (MEDUSA_DISABLE_TELEMETRY=true) where the suite starts it.
const { loadEnv, defineConfig } = require('@medusajs/framework/utils')

loadEnv(process.env.NODE_ENV || 'development', process.cwd())

module.exports = defineConfig({
  projectConfig: {
    databaseUrl: process.env.DATABASE_URL,
    http: {
      storeCors: 'http://127.0.0.1',
      adminCors: 'http://127.0.0.1',
      authCors: 'http://127.0.0.1',
      jwtSecret: process.env.JWT_SECRET || 'shop-engine-test-jwt',
      cookieSecret: process.env.COOKIE_SECRET || 'shop-engine-test-cookie',
    },
  },
  admin: { disable: true },
})
