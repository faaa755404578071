//! One module per provider. Each module's docs state the headers, the signed
//! bytes, the tolerance, the event id source and its stability across
//! retries, and the provider's redelivery window.

pub mod adyen;
pub mod discord;
pub mod lab;
pub mod sendgrid;
pub mod stripe;
pub mod twitch;
pub mod xero;
pub mod zoom;
