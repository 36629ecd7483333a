/**
 * A contact's fields as whoever writes them is held to: `/contacts` requests and a task's contact
 * tools (processes/tasks/tools.ts) parse with these, so both take the same.
 */
import { z } from 'zod';
import { text } from '../shared/text.ts';
import { ATTRIBUTE_KEY, ATTRIBUTE_VALUE_MAX, ATTRIBUTES_MAX } from './decide.ts';

const NAME_MAX = 200;
const NOTES_MAX = 10_000;

export const contactEmail = z.string().trim().toLowerCase().max(320).pipe(z.email());
export const contactName = text(NAME_MAX);
export const contactNotes = text(NOTES_MAX);

const attributeKey = z
  .string()
  .regex(ATTRIBUTE_KEY, 'must start with a letter and hold up to 64 letters, digits or underscores');
const attributeValue = text(ATTRIBUTE_VALUE_MAX);
const atMostKeys = (r: Record<string, unknown>) => Object.keys(r).length <= ATTRIBUTES_MAX;
const tooMany = { message: `at most ${ATTRIBUTES_MAX} attributes` };

export const contactAttributes = z.record(attributeKey, attributeValue).refine(atMostKeys, tooMany);
/** A change: a null value removes the key. */
export const attributesPatch = z.record(attributeKey, attributeValue.nullable()).refine(atMostKeys, tooMany);
