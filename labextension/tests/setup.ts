// DOM tests get a recording 2D context (jsdom has none); node tests have no canvas at all.
import { installCanvasStub } from './canvas-stub';

if (typeof HTMLCanvasElement !== 'undefined') {
  installCanvasStub();
  // @lumino/dragdrop subclasses DragEvent when loaded; jsdom does not define it
  if (!('DragEvent' in globalThis)) {
    Object.assign(globalThis, { DragEvent: class DragEvent extends MouseEvent {} });
  }
}
