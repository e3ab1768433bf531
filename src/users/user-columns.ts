// The user columns installation staff see (console pages, the data export): never a password hash or a secret.
export const USER_COLUMNS = {
  id: true,
  username: true,
  email: true,
  isStaff: true,
  isSuperuser: true,
  isActive: true,
  dateJoined: true,
  lastLogin: true,
} as const;
