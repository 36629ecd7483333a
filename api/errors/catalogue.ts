/**
 * The error table: status and type per code, from the spec's Errors section. `type` is a frozen
 * set keyed by status; codes may grow. The /docs/errors page is rendered from this table, and
 * every envelope's docUrl points at the code's row there.
 */
export const TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'conflict_error',
  412: 'conflict_error',
  413: 'invalid_request_error',
  422: 'validation_error',
  429: 'rate_limit_error',
  500: 'api_error',
  502: 'api_error',
  503: 'api_error',
  507: 'api_error',
};

/** code → [status, what it means]. Codes used by this service so far; the spec's table grows here. */
export const CATALOGUE: Record<string, [number, string]> = {
  malformed_json: [400, 'The body is not valid JSON.'],
  invalid_cursor: [400, 'The cursor was not handed out by this list, for this workspace and sort.'],
  invalid_request: [400, 'The request cannot be read (wrong content type, for example).'],
  body_too_large: [413, 'The body is larger than the service accepts.'],
  missing_api_key: [401, 'No credential was sent. Send `Authorization: Bearer <key>`.'],
  invalid_api_key: [401, 'The credential is not a key of this service, or its secret is wrong.'],
  revoked_api_key: [401, 'The key was revoked.'],
  expired_api_key: [401, 'The key passed its expiry time.'],
  insufficient_scope: [403, 'The credential lacks the scope named in `param`.'],
  beyond_caller_authority: [403, 'A key cannot be created wider than the key creating it.'],
  insufficient_authority: [403, 'The caller lacks a permission it tries to grant.'],
  resource_not_found: [404, 'No such resource in this workspace.'],
  role_not_found: [404, 'No such role in this workspace.'],
  revoked: [409, 'The key was revoked while the request was in flight.'],
  expired: [409, 'The key expired while the request was in flight.'],
  role_name_taken: [409, 'Another role of the workspace has this name (ignoring case).'],
  role_in_use: [409, 'Members, keys or invitations hold the role; pass `reassignTo`.'],
  role_immutable: [409, 'The owner role cannot be edited.'],
  role_undeletable: [409, 'The owner role cannot be deleted.'],
  suppression_not_removable: [409, 'A hard bounce is permanent and cannot be removed.'],
  version_conflict: [409, 'Someone else changed the resource after you read it.'],
  invalid_parameter: [422, 'A field or query parameter is invalid; `param` names it.'],
  unknown_parameter: [422, 'A field or query parameter is not part of this operation; `param` names it.'],
  capability_unsupported: [422, 'The credential is narrowed to some addresses and this operation reaches the whole workspace.'],
  workspace_limit_reached: [422, 'A soft limit of the workspace was reached; nothing was created.'],
  rate_limited: [429, 'Too many requests for this credential in this minute; see Retry-After.'],
  internal_error: [500, 'A fault of the service; report it with the request id.'],
};
