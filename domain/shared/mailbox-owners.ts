/**
 * The id of a mailbox for what belongs to it (signatures, labels): an address (`addr_…`) or a
 * domain's catch-all (`catchall-<domain id>`). Neither id is ever reused, so what belonged to a
 * deleted address never comes back with an address created again under that name.
 */
export const mailboxOwnerOf = (mailbox: { addressId: string | null; domainId: string }) =>
  mailbox.addressId ?? catchAllOwner(mailbox.domainId);

export const catchAllOwner = (domainId: string) => `catchall-${domainId}`;
