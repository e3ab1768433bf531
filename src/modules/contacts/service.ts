// Contacts of one organization: the record kernel's behaviour for the contact record type (record.ts).
import { recordService } from '../../records/record-service.js';
import { contactRecord, type ContactRow } from './record.js';
import type { ContactCreate, ContactDto, ContactUpdate } from './schemas.js';

export const contactService = recordService<ContactRow, ContactDto, ContactCreate, ContactUpdate>(contactRecord);
