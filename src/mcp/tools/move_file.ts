import type { RegisterTool } from '../tool.js';

export const register: RegisterTool = () => {};
