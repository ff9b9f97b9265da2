/**
 * Package file names (api-spec §2.6): `<PackageId>.<Version>.<ext>`. The type comes from the
 * extension, the version is the SemVer 2.0.0 suffix, the ID is what remains. The name arrives
 * from a client, so anything that could act as a path is refused before it goes near the disk.
 */
import { InvalidParameterError } from '../core/index.ts';
import { isValidSemVer } from '../core/index.ts';

export const PackageType = { Nupkg: 'nupkg', Zip: 'zip', Tar: 'tar', TarGz: 'tar.gz' } as const;
export type PackageType = (typeof PackageType)[keyof typeof PackageType];

/** Longest first, so `.tar.gz` wins over a bare `.gz` that is not supported anyway. */
const EXTENSIONS: ReadonlyArray<readonly [string, PackageType]> = [
  ['.tar.gz', PackageType.TarGz],
  ['.nupkg', PackageType.Nupkg],
  ['.zip', PackageType.Zip],
  ['.tar', PackageType.Tar],
];

export const MAX_FILE_NAME_LENGTH = 255;
/** NuGet-style IDs: letters, digits, `_`, `-`, and dots between segments. */
const PACKAGE_ID = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;

export interface PackageFileName {
  packageId: string;
  /** Exactly as written in the file name, build metadata included. */
  version: string;
  type: PackageType;
  /** The extension as written (case kept), with its leading dot. */
  extension: string;
}

function refuse(property: string, fileName: string, reason: string): InvalidParameterError {
  const shown = fileName.length > 100 ? `${fileName.slice(0, 100)}…` : fileName;
  return new InvalidParameterError(
    `Invalid ${property} '${shown}': ${reason}. Expected <PackageId>.<Version>.<ext> with a SemVer 2.0.0 version and one of .nupkg, .zip, .tar, .tar.gz`,
    [{ property, messages: [reason] }],
  );
}

/**
 * Parses a package file name, or throws 400 naming `property` with the reason. When several
 * splits would give a valid version, the longest version wins (`Pkg.1.2.3-beta.4.5.6` is
 * version `1.2.3-beta.4.5.6`), because IDs rarely look like versions and pre-releases often do.
 */
export function parsePackageFileName(fileName: string, property = 'FileName'): PackageFileName {
  if (fileName.length === 0) throw refuse(property, fileName, 'the file name is empty');
  if (fileName.length > MAX_FILE_NAME_LENGTH)
    throw refuse(property, fileName, `the file name is longer than ${MAX_FILE_NAME_LENGTH} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(fileName))
    throw refuse(property, fileName, 'the file name contains control characters');
  if (/[/\\:]/.test(fileName)) throw refuse(property, fileName, 'the file name contains a path separator');
  if (fileName.includes('..')) throw refuse(property, fileName, "the file name contains '..'");

  const lower = fileName.toLowerCase();
  const match = EXTENSIONS.find(([ext]) => lower.endsWith(ext));
  if (!match) throw refuse(property, fileName, 'unknown package extension');
  const [ext, type] = match;
  const base = fileName.slice(0, fileName.length - ext.length);
  const extension = fileName.slice(fileName.length - ext.length);

  for (let dot = base.indexOf('.'); dot !== -1; dot = base.indexOf('.', dot + 1)) {
    const version = base.slice(dot + 1);
    if (!isValidSemVer(version)) continue;
    const packageId = base.slice(0, dot);
    if (packageId === '') throw refuse(property, fileName, 'the package ID is empty');
    if (!PACKAGE_ID.test(packageId)) {
      throw refuse(
        property,
        fileName,
        `the package ID '${packageId}' may only contain letters, digits, '_', '-' and single dots`,
      );
    }
    return { packageId, version, type, extension };
  }
  if (isValidSemVer(base)) throw refuse(property, fileName, 'the package ID is empty');
  throw refuse(property, fileName, 'no SemVer 2.0.0 version found before the extension');
}

/** The canonical file name of a stored package, used for downloads. */
export function packageFileName(p: { packageId: string; version: string; type: PackageType }): string {
  return `${p.packageId}.${p.version}.${p.type}`;
}
