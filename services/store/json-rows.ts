/**
 * Rows read as JSON (row_to_json / json_build_object inside a statement that returns other rows,
 * so that one round trip answers several questions) carry timestamps as text: read them back here.
 */
export const jsonDate = (value: unknown): Date | null => (value == null ? null : new Date(value as string));
