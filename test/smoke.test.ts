import t from 'tap'
import { startApp } from './helpers/app.js'
import { signInWithCookie } from './helpers/sign-in.js'

t.test('the service starts, answers health and signs a user in', async (t) => {
  const s = await startApp()
  t.teardown(s.close)
  const health = await s.app.inject({ method: 'GET', url: '/health' })
  t.equal(health.statusCode, 200)
  t.equal(health.json().status, 'healthy')
  const session = await signInWithCookie(s)
  t.match(session.userId, /^user_/)
})
