// Companies of one organization: the record kernel's behaviour for the company record type (record.ts).
import { recordService } from '../../records/record-service.js';
import { companyRecord, type CompanyRow } from './record.js';
import type { CompanyCreate, CompanyDto, CompanyUpdate } from './schemas.js';

export const companyService = recordService<CompanyRow, CompanyDto, CompanyCreate, CompanyUpdate>(companyRecord);
