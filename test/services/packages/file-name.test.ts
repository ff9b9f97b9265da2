import { describe, expect, it } from 'vitest';
import { InvalidParameterError } from '../../../services/core/index.ts';
import { packageFileName, parsePackageFileName } from '../../../services/packages/file-name.ts';

describe('parsePackageFileName', () => {
  it.each([
    ['Acme.Web.1.2.3.zip', 'Acme.Web', '1.2.3', 'zip'],
    ['Acme.Web.2.0.0-rc.1+sha.5114f85.tar.gz', 'Acme.Web', '2.0.0-rc.1+sha.5114f85', 'tar.gz'],
    ['Acme.Web2.1.2.3.zip', 'Acme.Web2', '1.2.3', 'zip'],
    ['Acme.2.1.2.3.tar', 'Acme.2', '1.2.3', 'tar'],
    ['JawsDeploy-package.1.0.5-RC2.nupkg', 'JawsDeploy-package', '1.0.5-RC2', 'nupkg'],
    ['web_frontend.10.20.30.TAR.GZ', 'web_frontend', '10.20.30', 'tar.gz'],
    ['App.1.0.0.NuPkg', 'App', '1.0.0', 'nupkg'],
    ['App.1.0.0+build.01.zip', 'App', '1.0.0+build.01', 'zip'],
    ['Pkg.1.2.3-beta.4.5.6.zip', 'Pkg', '1.2.3-beta.4.5.6', 'zip'],
    ['a.0.0.0.tar', 'a', '0.0.0', 'tar'],
    ['Lib.1.2.3.4.5.zip', 'Lib.1.2', '3.4.5', 'zip'],
  ])('parses %s', (fileName, packageId, version, type) => {
    expect(parsePackageFileName(fileName)).toMatchObject({ packageId, version, type });
  });

  it('keeps the extension as written', () => {
    expect(parsePackageFileName('App.1.0.0.TAR.GZ').extension).toBe('.TAR.GZ');
  });

  it.each([
    ['1.2.zip', 'no SemVer'],
    ['1.2.3.zip', 'package ID is empty'],
    ['.1.2.3.zip', 'package ID is empty'],
    ['Acme.zip', 'no SemVer'],
    ['Acme.Web.zip', 'no SemVer'],
    ['Acme.v1.2.3.zip', 'no SemVer'],
    ['Acme.01.2.3.zip', 'no SemVer'],
    ['Acme.1.2.zip', 'no SemVer'],
    ['Acme.1.2.3.rar', 'unknown package extension'],
    ['Acme.1.2.3.gz', 'unknown package extension'],
    ['Acme.1.2.3', 'unknown package extension'],
    ['Acme.1.2.3.zip.exe', 'unknown package extension'],
    ['../Acme.1.2.3.zip', 'path separator'],
    ['dir/Acme.1.2.3.zip', 'path separator'],
    ['dir\\Acme.1.2.3.zip', 'path separator'],
    ['C:Acme.1.2.3.zip', 'path separator'],
    ['Acme..1.2.3.zip', "'..'"],
    ['Acme\u0000.1.2.3.zip', 'control characters'],
    ['Acme\n.1.2.3.zip', 'control characters'],
    ['My App.1.2.3.zip', 'may only contain'],
    ['', 'empty'],
    [`${'a'.repeat(250)}.1.2.3.zip`, 'longer than'],
  ])('refuses %s (%s)', (fileName, reason) => {
    let error: unknown;
    try {
      parsePackageFileName(fileName);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidParameterError);
    const invalid = error as InvalidParameterError;
    expect(invalid.message).toContain(reason);
    expect(invalid.validationErrors?.[0]?.property).toBe('FileName');
  });

  it('names the property it was given', () => {
    expect(() => parsePackageFileName('x.zip', 'PackageFile')).toThrow(/Invalid PackageFile/);
  });
});

describe('packageFileName', () => {
  it('rebuilds the canonical name from its parts', () => {
    expect(packageFileName({ packageId: 'Acme.Web', version: '2.0.0-rc.1+sha.5', type: 'tar.gz' })).toBe(
      'Acme.Web.2.0.0-rc.1+sha.5.tar.gz',
    );
  });
});
