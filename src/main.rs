//! Entry point of the web app's main thread.

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(jarvis_web::App);
}
