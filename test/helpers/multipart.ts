// A multipart/form-data body for app.inject, as a browser or curl sends an import's upload.
/** The given fields as one body; `file` is sent as a file part (data.csv, text/csv). */
export function multipartForm(fields: Record<string, string | Buffer>) {
  const boundary = '----import-test-boundary';
  const parts = Object.entries(fields).map(([name, value]) =>
    Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${name === 'file' ? '; filename="data.csv"\r\nContent-Type: text/csv' : ''}\r\n\r\n`,
      ),
      Buffer.isBuffer(value) ? value : Buffer.from(value),
      Buffer.from('\r\n'),
    ]),
  );
  return {
    payload: Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`)]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}
