/**
 * The error table: status and type per code, from the spec's Errors section. `type` is a frozen
 * set keyed by status; codes may grow. The /docs/errors page is rendered from this table, and
 * every envelope's docUrl points at the code's row there.
 */
export const TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  408: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'conflict_error',
  412: 'conflict_error',
  413: 'invalid_request_error',
  416: 'invalid_request_error',
  431: 'invalid_request_error',
  422: 'validation_error',
  429: 'rate_limit_error',
  500: 'api_error',
  502: 'api_error',
  503: 'api_error',
  507: 'api_error',
};

/**
 * code → [status, what it means]. Codes used by this service so far; the spec's table grows here.
 * Operations name the codes they answer with from these keys (`ErrorCode`), and the OpenAPI
 * document reads their statuses and meanings from here too (api/openapi.ts).
 */
const TABLE = {
  malformed_json: [400, 'The body is not valid JSON.'],
  invalid_cursor: [400, 'The cursor was not handed out by this list, for this workspace and sort.'],
  restricted_key: [
    400,
    "The other provider's key can only send mail; an import needs a key that can read the account (full access).",
  ],
  provider_key_refused: [400, "The other provider refused the key; the message quotes the provider's answer."],
  invalid_request: [
    400,
    'The request cannot be read (a content type the operation does not take, a URL whose percent-encoding does not decode, for example).',
  ],
  body_too_large: [413, 'The body is larger than the service accepts.'],
  request_timeout: [408, 'The request did not arrive whole in time; the connection was closed.'],
  headers_too_large: [
    431,
    'The request line and headers together are larger than the service reads (16 KiB); the connection was closed.',
  ],
  missing_api_key: [401, 'No credential was sent. Send `Authorization: Bearer <key>`.'],
  invalid_api_key: [401, 'The credential is not a key of this service, or its secret is wrong.'],
  revoked_api_key: [401, 'The key was revoked.'],
  expired_api_key: [401, 'The key passed its expiry time.'],
  invalid_access_token: [401, 'The OAuth access token is unknown or revoked; the app must be connected again.'],
  expired_access_token: [401, 'The OAuth access token passed its expiry; renew it with the refresh token.'],
  grant_required: [401, 'The person disconnected the app; the app must be connected again.'],
  grant_expired: [401, "The person's approval of the app has ended; the app must be connected again."],
  grant_workspace_gone: [401, 'The workspace the app was connected to is gone.'],
  grant_access_lost: [
    401,
    'The person who connected the app is no longer a member of the workspace; the app must be connected again.',
  ],
  insufficient_scope: [
    403,
    'The credential lacks a scope the operation needs; the message names the scope. `param` is null, or the request field that calls for the scope.',
  ],
  beyond_caller_authority: [
    403,
    'A key cannot create, or revoke, a key reaching further than itself (scopes, mode, allowlists).',
  ],
  insufficient_authority: [403, 'The caller lacks a permission it tries to grant.'],
  task_limit_reached: [403, 'The workspace holds as many tasks as its plan covers; delete one first.'],
  task_active_limit_reached: [
    403,
    'The workspace has as many active tasks as its plan covers; pause or delete one first, or create this one paused.',
  ],
  api_key_only: [403, 'Only an API key can do this: rotate itself, or read its own request log.'],
  step_up_required: [403, 'A sensitive change by an OAuth app needs step-up verification first; nothing was changed.'],
  step_up_code_invalid: [400, 'Wrong step-up code; the message states the tries left at this code.'],
  step_up_code_expired: [
    400,
    'No step-up code is waiting: it is older than 10 minutes, was used or replaced, or none was asked for.',
  ],
  step_up_not_applicable: [400, 'An API key called a step-up endpoint: keys are never asked for step-up.'],
  step_up_locked: [
    429,
    "Five wrong tries at this code (ask for a new one), or 10 wrong codes in 24 hours from this app or 20 from all the person's apps (see Retry-After).",
  ],
  step_up_throttled: [
    429,
    'More than 5 new codes per hour or 20 per 24 hours for this app and person; see Retry-After.',
  ],
  step_up_undeliverable: [503, 'The step-up email could not be sent; no code is waiting. Ask again later.'],
  resource_not_found: [404, 'No such resource in this workspace.'],
  role_not_found: [404, 'No such role in this workspace.'],
  contact_not_found: [404, 'No contact with this address (or id) in the book of this workspace.'],
  audience_not_found: [404, 'No such audience in this workspace; `param` names the id.'],
  task_not_found: [404, 'No such task in this workspace.'],
  task_run_not_found: [404, 'No such run of this task.'],
  task_approval_not_found: [404, 'No such approval of this task.'],
  revoked: [409, 'The key was revoked while the request was in flight.'],
  expired: [
    409,
    'The key expired while the request was in flight; or the export is older than 365 days and can no longer be downloaded.',
  ],
  export_not_ready: [
    409,
    'The export is not ready yet (queued, running, or failed): poll it until `status` is `ready`.',
  ],
  export_not_permitted: [
    403,
    'Only the owner, or a member whose role holds every permission, can export: through a key with no role or such a role, or an app they connected.',
  ],
  export_limit_reached: [429, 'The workspace exports once a day; see Retry-After for when the next export can start.'],
  role_name_taken: [409, 'Another role of the workspace has this name (ignoring case).'],
  role_in_use: [409, 'Members, keys or invitations hold the role; pass `reassignTo`.'],
  role_immutable: [409, 'The owner role cannot be edited.'],
  role_undeletable: [409, 'The owner role cannot be deleted.'],
  invitation_too_soon: [
    409,
    'The address was invited less than ten minutes ago; after that, inviting it again refreshes the invitation.',
  ],
  suppression_not_removable: [409, 'A hard bounce is permanent and cannot be removed.'],
  stream_paused: [
    409,
    'The sending lane is paused: too much of its mail bounced or drew spam reports over 7 days. Each lane pauses alone.',
  ],
  stream_locked: [
    409,
    'The lane paused again within a day of its last resume; it cannot be resumed before `lockedUntil`.',
  ],
  unsubscribe_not_removable: [409, 'The recipient unsubscribed themselves; only they can rejoin.'],
  contact_exists: [409, 'The address is in the contact book already.'],
  builtin_audience: [
    409,
    'The default audience holds every contact: it cannot be deleted, and a contact leaves it only by being deleted.',
  ],
  template_name_taken: [409, 'Another template of the workspace has this name (ignoring case).'],
  template_slug_taken: [409, 'Another template of the workspace has this slug.'],
  template_in_use: [409, 'A broadcast not yet started uses the template; cancel it or wait for its start.'],
  domain_in_use: [
    409,
    'The domain is added to a workspace already (this one or another), or is a tracking or storage host of a domain: a name serves one at a time.',
  ],
  tracking_host_in_use: [
    409,
    'Another domain (or this one, as its storage host) uses this host, or it is an added domain.',
  ],
  storage_host_in_use: [
    409,
    'Another domain (or this one, as its tracking host) uses this host, or it is an added domain.',
  ],
  webhook_disabled: [409, 'The webhook endpoint is disabled; enable it first.'],
  version_conflict: [409, 'Someone else changed the resource after you read it.'],
  address_reserved: [
    409,
    'The service answers this local part on every domain itself (postmaster, abuse, hostmaster, webmaster, noc, security, mailer-daemon, root).',
  ],
  address_unavailable: [409, 'The workspace has this address already.'],
  username_taken: [409, 'Another address, of any workspace, logs in with this name.'],
  username_locked: [409, 'The login name cannot change while app passwords exist; revoke them first.'],
  signature_name_taken: [
    409,
    'The address has a signature of this name (ignoring case); after a lost answer, the retried create had succeeded.',
  ],
  rule_name_taken: [409, 'The mailbox has a rule of this name (ignoring case).'],
  incomplete_order: [422, '`ruleIds` must name every rule of the mailbox exactly once.'],
  reject_needs_envelope: [422, 'A rule that rejects mail must also test `envelope_from`.'],
  address_required: [422, 'Per-address settings need `?address=` (an address or `*@<domain>`).'],
  domain_has_addresses: [409, 'The domain has addresses; delete them before the domain.'],
  mailbox_login_forbidden: [
    403,
    'A login or app password sends mail as the address: the credential needs `emails:send` to hand one out.',
  ],
  member_is_owner: [
    422,
    'The person is the workspace owner or in the workspace already: the owner cannot be invited, changed or removed this way.',
  ],
  signature_limit_reached: [422, 'The address has 50 signatures already.'],
  label_not_directly_settable: [
    422,
    '`sent` and `drafts` follow from the messages of a thread and cannot be set; move between inbox, archive, spam and trash.',
  ],
  label_not_found: [422, "No such label in the thread's mailbox; `param` names it."],
  label_name_taken: [409, 'The mailbox has a label of this name (ignoring case), or it names a system label.'],
  label_limit_reached: [422, 'The mailbox has 100 custom labels already.'],
  address_has_no_mailbox: [
    422,
    'The address takes no mail (disabled, or its domain does not receive; for rules: not an address of the workspace, or a catch-all that is off): it has no mailbox to hold labels or rules.',
  ],
  draft_sending: [409, 'The draft is being sent; it can no longer be changed or deleted.'],
  file_in_use: [
    409,
    'A draft names the file as an attachment (remove it there first), or the file is an attachment of received mail (it goes with its thread).',
  ],
  upload_no_name: [400, 'An upload needs its file name in the `X-Filename` header or the `filename` query parameter.'],
  upload_empty: [400, 'The upload has no bytes.'],
  upload_dangerous: [
    400,
    'The file would run when opened (an executable or script, by its extension or its bytes); it is not taken.',
  ],
  upload_too_large: [
    413,
    "The upload is larger than it may be: a file 10 MiB (what one message may carry), a mailbox import's part `chunkBytes`.",
  ],
  too_many_files: [400, 'An import takes at most 50 files.'],
  unsupported_file: [
    400,
    'A file of a mailbox import is neither an mbox nor a message (.eml); the message names the file. Formats are read from the bytes, never the name.',
  ],
  missing_chunks: [
    412,
    'Parts of the upload are missing or incomplete; the message names each file and part to upload before starting.',
  ],
  import_settled: [
    409,
    'The import is completed, failed or cancelled; its files can no longer change. Create a new one.',
  ],
  address_not_allowed: [403, 'The address is not one of the workspace that this credential reaches.'],
  upload_no_address: [
    403,
    'A credential narrowed to some addresses or domains uploads only into a mailbox it reaches: name it in `address`.',
  ],
  upload_forbidden: [403, 'The `address` named is not a mailbox of the workspace that the credential reaches.'],
  upload_failed: [502, 'The file could not be stored; nothing was kept. Retry unchanged.'],
  upload_storage_full: [507, 'The file store is full; nothing was kept.'],
  address_not_found: [
    404,
    'No such address in this workspace (a catch-all: `*@<domain>` on a verified domain with `catchAll` on); `param` names the field.',
  ],
  unknown_domain: [422, 'The domain of the address is not a domain of this workspace.'],
  forward_consent_rate_limited: [
    429,
    'The destination was sent 5 consent mails in the last 24 hours, from all workspaces together; see Retry-After.',
  ],
  invalid_parameter: [422, 'A field or query parameter is invalid; `param` names it.'],
  unknown_parameter: [422, 'A field or query parameter is not part of this operation; `param` names it.'],
  capability_unsupported: [
    422,
    'The credential is narrowed to some addresses and this operation reaches the whole workspace.',
  ],
  invalid_template: [422, 'The template content breaks a rule; `param` names the path down to the block.'],
  template_archived: [422, 'The template is archived and cannot be sent.'],
  template_not_published: [422, 'The template has no published version to send.'],
  template_version_not_deletable: [
    422,
    'The only, the live, or the being-edited version of a template cannot be deleted.',
  ],
  template_version_not_found: [422, 'The template has no such version.'],
  unknown_template_prop: [422, 'A prop was given that the template version does not declare; `param` names it.'],
  unknown_template_slot: [422, 'A slot was given that the template version does not declare; `param` names it.'],
  workspace_limit_reached: [422, 'A soft limit of the workspace was reached; nothing was created.'],
  rate_limited: [429, 'Too many requests for this credential in this minute; see Retry-After.'],
  invalid_idempotency_key: [
    400,
    'The Idempotency-Key header is not 1 to 255 of letters, digits, `_`, `.`, `:` and `-`.',
  ],
  invalid_event: [
    422,
    'A contact event breaks a rule (name, email or contactId, properties, occurredAt, createContact, contactName); `param` names the field.',
  ],
  idempotency_key_reuse: [
    422,
    'The Idempotency-Key was used for a different request (for contact events: a different event at this position of the batch).',
  ],
  idempotency_key_in_use: [
    409,
    'A request with this Idempotency-Key is still being answered; retry after Retry-After seconds to get its answer.',
  ],
  temp_inbox_rate_limited: [
    429,
    'At most 10 disposable inboxes per 10 minutes from one network (IPv4 /24, IPv6 /56); see Retry-After.',
  ],
  event_rate_limited: [
    429,
    'More than 600 contact events per minute for this key (a batch counts as its size); nothing was stored. See Retry-After.',
  ],
  from_address_forbidden: [
    403,
    "The caller cannot send as `from`: it is not an address of the workspace that the credential reaches (its allowlists, an SMTP login's one address), or an app's person holds it only as a `viewer`.",
  ],
  address_disabled: [409, 'The sending address is disabled; enable it to send from it.'],
  email_not_cancellable: [
    409,
    'Only a scheduled email can be cancelled, before its time and before delivery has started.',
  ],
  translation_not_configured: [409, 'Translation needs an AI provider, and none is configured for this service.'],
  ai_not_configured: [409, 'The operation needs an AI model, and none is configured for this service.'],
  temp_mail_not_configured: [409, 'This service has no disposable domain: disposable inboxes are off.'],
  unknown_language: [422, '`translate.to` is not a BCP 47 tag of a language we know (such as `de` or `pt-BR`).'],
  translation_too_long: [
    422,
    'A translated message holds at most 50,000 characters of subject, text and html together.',
  ],
  ai_quota_exceeded: [
    429,
    "Today's AI actions of the workspace are used up (a send with `translate`, a template design or redesign spends one); nothing was done; they start again at 00:00 UTC, which Retry-After counts down to.",
  ],
  translation_failed: [
    503,
    'The model did not translate the message (no answer in time, or an answer that is not the translation); nothing was sent and no AI action spent. Worth retrying unchanged.',
  ],
  design_failed: [
    503,
    'The model did not design the template (no answer in time, or an answer that is not a valid block document); nothing was stored and no AI action spent. Worth retrying.',
  ],
  invalid_email_address: [422, 'An address is not an email address; `param` names it (`to.0`, `from`).'],
  reserved_header: [
    422,
    'A header the service sets (From, To, Message-ID, DKIM-Signature, Content-*, …) was given in `headers`; `param` names it.',
  ],
  too_many_recipients: [422, 'More than 50 recipients in `to`, `cc` and `bcc` together.'],
  too_many_items: [422, 'A batch holds 1 to 100 messages, 1 to 10 when any of them asks for `translate`.'],
  template_not_found: [422, 'No template of the workspace has the id or slug given in `template.id`.'],
  send_quota_exceeded: [
    429,
    "The workspace's monthly send allowance is used up; it starts again on the first of next month (00:00 UTC), which Retry-After counts down to.",
  ],
  internal_error: [500, 'A fault of the service; report it with the request id.'],
  thread_update_failed: [
    500,
    'The thread could not be changed because of a fault of the service; report it with the request id.',
  ],
  thread_delete_failed: [
    500,
    'The thread could not be deleted because of a fault of the service; report it with the request id.',
  ],
  range_not_satisfiable: [
    416,
    'The `Range` starts past the end of the file (`Content-Range` says its size), or is not a single `bytes=` range.',
  ],
  image_not_stored: [502, 'The image could not be stored; nothing was kept. Retry unchanged.'],
  task_run_limit_reached: [409, "The task's runs of today reached its `maxRunsPerDay`; runs start again at 00:00 UTC."],
  task_approval_decided: [409, 'The approval was already approved or denied; the first decision stands.'],
  task_run_finished: [409, 'The run has already finished; nothing waits for this approval.'],
  already_running: [
    409,
    'One is under way already (a provider import or an export of the workspace, a mailbox import into the address); wait for it to end or cancel it.',
  ],
  provider_unavailable: [
    503,
    'The other provider did not answer, answered with a fault, or asked to slow down; retry after Retry-After seconds.',
  ],
  unreachable: [
    503,
    'A dependency (the database) did not answer in time; retry after Retry-After seconds. The message says whether the change was stored; with an Idempotency-Key a retry is always safe.',
  ],
} satisfies Record<string, [number, string]>;

export type ErrorCode = keyof typeof TABLE;
export const CATALOGUE: Record<ErrorCode, [number, string]> = TABLE;

export const isErrorCode = (code: string): code is ErrorCode => Object.hasOwn(TABLE, code);
