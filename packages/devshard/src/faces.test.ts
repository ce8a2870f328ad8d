// The package's faces (package.json exports: '.', './session', './host', './testing') each list a
// name once: no value is reachable from two faces, so an importer never has to choose.
import { describe, expect, it } from 'vitest';
import * as hostFace from './host-face.js';
import * as coreFace from './index.js';
import * as sessionFace from './session-face.js';
import * as testingFace from './testing/index.js';

describe('public faces', () => {
  it('no runtime name is exported by two faces', () => {
    const seen = new Map<string, string>();
    const twice: string[] = [];
    for (const [face, names] of Object.entries({ coreFace, sessionFace, hostFace, testingFace })) {
      for (const name of Object.keys(names)) {
        const first = seen.get(name);
        if (first !== undefined) twice.push(`${name}: ${first} and ${face}`);
        seen.set(name, face);
      }
    }
    expect(twice).toEqual([]);
  });
});
