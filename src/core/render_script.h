/* Private to src/core: the analysis page's fixed enhancement script
 * (render_script.js, embedded by tools/embed_script.py) and its SHA-256 in
 * base64, as the page's Content-Security-Policy names it. */
#ifndef TORCHSCAN_RENDER_SCRIPT_H
#define TORCHSCAN_RENDER_SCRIPT_H

extern const char rs_script[];
extern const char rs_script_sha256[];

#endif /* TORCHSCAN_RENDER_SCRIPT_H */
