// The REST API's session cookie (SPEC Authentication: REST).
export const SESSION_COOKIE = 'app_session'
